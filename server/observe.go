package server

import (
	"net/http"
	"time"
)

// observed reports every request to Config.ObserveRequest (HTTP metrics);
// without one, h is returned as it is.
func (s *Server) observed(h http.Handler) http.Handler {
	obs := s.cfg.ObserveRequest
	if obs == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		// The mux stores the pattern it matched in the request it was
		// given, which is r: no layer before it makes a new request.
		obs(r.Pattern, sw.status(), time.Since(start))
	})
}

// statusWriter remembers the status code written. Unwrap lets
// http.ResponseController reach the connection (flushes, deadlines).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}
