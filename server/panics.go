package server

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/capgraph/capgraph/server/internal/agui"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/sse"
)

// errInternal is what a client sees of a handler's panic: the details go to
// the log, not to the client.
var errInternal = errors.New("internal server error (the server logged the details)")

// recoverPanics wraps every route: a handler's panic becomes a logged 500
// in the API's error shape (the OpenAI error body), or, when a stream had
// already started, the stream's own error frame before it ends. Handlers
// that claim something (an approval token) release it in their own defers,
// so no state stays half-claimed. http.ErrAbortHandler passes through.
func (s *Server) recoverPanics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // the sentinel is compared as net/http does
				panic(v)
			}
			s.cfg.Logger.Error("request handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if !tw.wrote {
				s.writeError(tw, errInternal)
				return
			}
			if !strings.HasPrefix(tw.Header().Get("Content-Type"), "text/event-stream") {
				panic(http.ErrAbortHandler) // a body was being written: cut the response
			}
			streamFailure(tw, r.URL.Path)
		}()
		h.ServeHTTP(tw, r)
	})
}

// streamFailure ends a started event stream with its API's error frame.
func streamFailure(w http.ResponseWriter, path string) {
	code := "internal_error"
	e := apierror.Body{Message: errInternal.Error(), Type: "server_error", Code: &code}
	sse := sse.Continue(w)
	switch {
	case strings.HasPrefix(path, "/agui"):
		sse.Data(agui.Event{Type: "RUN_ERROR", Message: e.Message, Code: code})
	case strings.HasPrefix(path, "/v1/"):
		sse.Data(map[string]any{"error": e})
	default:
		sse.Frame("", "error", map[string]any{"error": e})
	}
	sse.Flush()
}

// trackingWriter notes whether the response has started. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.wrote = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.wrote = true
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
