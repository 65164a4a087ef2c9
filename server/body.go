package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
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

// bodyError turns a failed body read into what the client is told: 413
// for an oversized body, 408 for one that stopped arriving, 400 for one
// that ended early — never the network error, which names addresses.
func bodyError(r *http.Request, read int64, err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apierror.RequestError{Kind: apierror.ErrBodyTimeout, Param: "body", Message: fmt.Sprintf(
			"the request body stopped arriving after %d of the %s: send the whole body, or a Content-Length that matches it", read, announced(r))}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "the request body ended after %d of the %s", read, announced(r))
	}
	return badRequest("body", "the request body could not be read after %d bytes", read)
}

func announced(r *http.Request) string {
	if r.ContentLength >= 0 {
		return fmt.Sprintf("%d bytes its Content-Length announces", r.ContentLength)
	}
	return "bytes of its chunked encoding"
}

// readBody reads the whole request body (see above).
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, bodyError(r, int64(len(b)), err)
	}
	return b, nil
}

// decodeJSON reads a JSON body into v: exactly one JSON value, unknown
// fields ignored (the OpenAI and AG-UI request shapes carry many fields the
// server does not use). Errors are 400s that name the field, 413 or 408.
func decodeJSON(r *http.Request, v any) error {
	return decodeBody(r, v, false)
}

// decodeStrictJSON is decodeJSON refusing unknown fields: the native API's
// own shapes, where a misspelt field ("strem") must not be ignored.
func decodeStrictJSON(r *http.Request, v any) error {
	return decodeBody(r, v, true)
}

func decodeBody(r *http.Request, v any, strict bool) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	return unmarshalRequest(b, v, strict)
}

// unmarshalRequest decodes b, which must hold exactly one JSON value, into v.
func unmarshalRequest(b []byte, v any, strict bool) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("body", "a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return badRequest("body", "unexpected data after the JSON value at byte %d: the body must be exactly one JSON value", dec.InputOffset())
	}
	return nil
}

// jsonError is a decoding failure as a 400 naming the field and what was
// expected, in JSON's terms rather than Go's.
func jsonError(err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		re *apierror.RequestError
		oe *agent.OptionError
	)
	switch {
	case errors.As(err, &re):
		return re // a field's own decoder said what is wrong
	case errors.As(err, &oe):
		return badRequest("options."+oe.Option, "%s", oe.Reason)
	case errors.As(err, &se):
		return badRequest("body", "invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "invalid JSON: the body ends inside a value")
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		if strings.HasPrefix(err.Error(), "options: ") {
			field = "options." + field // decoded by agent.TurnOptions, which names its own fields only
		}
		field = jsonPath(field)
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && jsonKind(te.Type) == "a number" {
			// A number no float holds (1e400): "expected a number" would not say why.
			return badRequest(field, "%s is beyond the range of a 64-bit float (about ±1.8e308); give a finite number", n)
		}
		return badRequest(field, "expected %s, got %s", jsonKind(te.Type), jsonValueName(te.Value))
	}
	msg := err.Error()
	if i := strings.Index(msg, "json: unknown field "); i >= 0 {
		name := strings.Trim(msg[i+len("json: unknown field "):], `"`)
		param := name
		if prefix := strings.TrimSuffix(msg[:i], ": "); prefix != "" && !strings.Contains(prefix, " ") {
			param = prefix + "." + name // "options: json: unknown field …"
		}
		return badRequest(param, "unknown field %q", name)
	}
	// Anything else a decoder reports (a field's UnmarshalJSON): its words,
	// without Go's package prefixes.
	return badRequest("body", "%s", strings.ReplaceAll(msg, "json: ", ""))
}

// jsonPath drops from a decoder's field path the names of embedded Go
// structs ("plan.steps.PlannedStep.parameters"): the request's own names
// are lower case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p == "" || p[0] < 'A' || p[0] > 'Z' {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return field
	}
	return strings.Join(kept, ".")
}

// jsonKind names a Go type as the JSON value it is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

// jsonValueName is UnmarshalTypeError.Value ("number", "string", "number
// 1e999" …) with an article.
func jsonValueName(v string) string {
	switch {
	case v == "":
		return "another type"
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"):
		return "an " + v
	}
	return "a " + v
}
