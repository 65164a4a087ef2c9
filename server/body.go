package server

import (
	"io"
	"net/http"
	"time"
)

// Request bodies are read whole, bounded in size (Config.MaxBodyBytes, 413
// beyond) and in time: a body that stops arriving for
// Config.BodyIdleTimeout — a client announcing more bytes in Content-Length
// than it sends — is answered 408 at once instead of holding the handler
// until the request's ReadTimeout. Then the bytes must be exactly one JSON
// value (whitespace around it allowed): anything after it is a 400, so a
// truncated or concatenated request never runs.

// idleBody sets a read deadline before every read of the body, so a
// stalled body fails after idle without moving the request's overall
// deadline (Config.ReadTimeout) later.
type idleBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	idle     time.Duration
	deadline time.Time // the request's whole-read deadline; zero: none
	read     int64
}

func (b *idleBody) Read(p []byte) (int, error) {
	d := time.Now().Add(b.idle)
	if !b.deadline.IsZero() && b.deadline.Before(d) {
		d = b.deadline
	}
	_ = b.rc.SetReadDeadline(d) // a writer without deadlines (a recorder): no bound
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}

// unreadBodies bounds, on every route, what a request body the handler
// did not read to its end can hold up. net/http reads such a body after
// the handler (to reuse the connection) before it sends the answer, bounded
// only by ReadTimeout: a 401, a 404 or a refusal of the MCP handler to a
// body shorter than its Content-Length came after 30 s. An answer written
// before the body's end closes the connection instead (the body is never
// read), and whatever is read after the handler gets BodyIdleTimeout.
func (s *Server) unreadBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		body := &endSeen{ReadCloser: r.Body}
		r.Body = body
		next.ServeHTTP(&closeUnread{ResponseWriter: w, body: body, proto1: r.ProtoMajor == 1}, r)
		if !body.ended {
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyIdleTimeout))
		}
	})
}

// endSeen notes whether a body was read to its end.
type endSeen struct {
	io.ReadCloser
	ended bool
}

func (b *endSeen) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.ended = true // at its end, or failed: nothing more is read
	}
	return n, err
}

// closeUnread asks, over HTTP/1, to close the connection after an answer
// whose status is written before the request's body was read to its end.
type closeUnread struct {
	http.ResponseWriter
	body   *endSeen
	proto1 bool
	wrote  bool
}

func (w *closeUnread) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if w.proto1 && !w.body.ended {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeUnread) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *closeUnread) Unwrap() http.ResponseWriter { return w.ResponseWriter }
