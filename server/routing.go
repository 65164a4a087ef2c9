package server

import (
	"github.com/capgraph/capgraph/server/internal/turns"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// Every answer of the server is in its API's shape, the mux's own too: a
// path no route serves is a 404 and a route asked with another method a 405
// (with Allow), both as the JSON error body ({"error":{message, type,
// param, code}}, the OpenAI shape the native API shares) instead of
// net/http's plain text. Paths under /v1/ and /api/ never fall through to
// the static page.

// probeMethods are the methods tried to tell a 405 from a 404.
var probeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// apiPath reports whether p belongs to an API (JSON answers only).
func apiPath(p string) bool {
	return strings.HasPrefix(p, "/v1/") || p == "/v1" || strings.HasPrefix(p, "/api/") || p == "/api" || p == "/agui" || strings.HasPrefix(p, "/agui/")
}

// staticPattern is the static page's catch-all route.
const staticPattern = "GET /"

// dispatch serves r through mux, answering what no route takes itself. An
// API path that is not clean ("/api/threads/..", "//", "/./") is refused
// instead of redirected: a client posting a body would not follow, and
// "." and ".." are no thread ids.
func (s *Server) dispatch(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; apiPath(p) && path.Clean(p) != p && p != "/v1/" && p != "/api/" && p != "/agui/" {
			if strings.HasPrefix(p, "/api/threads/") {
				s.writeError(w, badRequest("thread", "the path %s is not a clean path: a thread id is %s", quotePath(p), turns.ThreadIDRule))
				return
			}
			s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "no such route: " + r.Method + " " + quotePath(p)})
			return
		}
		_, pattern := mux.Handler(r)
		if pattern == "" || pattern == staticPattern && apiPath(r.URL.Path) {
			s.routeMiss(mux, w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// routeMiss answers 405 with the methods the path has, or 404.
func (s *Server) routeMiss(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range probeMethods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := mux.Handler(probe); p != "" && !(p == staticPattern && apiPath(r.URL.Path)) {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrMethodNotAllowed, Message: r.Method + " is not allowed here; use " + strings.Join(allow, " or ")})
		return
	}
	s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "no such route: " + r.Method + " " + quotePath(r.URL.Path)})
}

// quotePath shows a requested path in an error message, made printable.
func quotePath(p string) string {
	q := turns.QuoteForClient(p)
	return q[1 : len(q)-1]
}

// staticFiles serves the built-in page's files, answering any name that
// is no valid file name of it (invalid UTF-8 such as %c0%ae, "..", empty
// segments) with the JSON 404 instead of letting the file server fail
// with a 500.
func (s *Server) staticFiles(files http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name != "" && (!utf8.ValidString(name) || !fs.ValidPath(name) || strings.ContainsAny(name, "\\\x00")) {
			s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "no such file: " + quotePath(r.URL.Path)})
			return
		}
		files.ServeHTTP(&staticErrors{ResponseWriter: w, s: s}, r)
	})
}

// staticErrors replaces the file server's plain-text error answers with
// the JSON error of the same status.
type staticErrors struct {
	http.ResponseWriter
	s      *Server
	failed bool
}

func (e *staticErrors) WriteHeader(code int) {
	if code >= 400 && !e.failed {
		e.failed = true
		h := e.Header()
		h.Del("Content-Type")
		h.Del("X-Content-Type-Options")
		// Whatever the file server could not serve (a 500 for a name the
		// embedded files refuse) is a file the page does not have.
		e.s.writeError(e.ResponseWriter, &apierror.RequestError{Kind: apierror.ErrNotFound, Message: "no such file"})
		return
	}
	e.ResponseWriter.WriteHeader(code)
}

func (e *staticErrors) Write(b []byte) (int, error) {
	if e.failed {
		return len(b), nil // the file server's plain-text message
	}
	return e.ResponseWriter.Write(b)
}

func (e *staticErrors) Unwrap() http.ResponseWriter { return e.ResponseWriter }
