package server

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// Browser clients on other sites (a control-room portal calling the API
// with fetch) need CORS; the built-in page is same-origin and needs none.
// Authentication is a bearer key, never a cookie, so no response allows
// credentials, and a preflight from an origin not listed gets no CORS
// header: the browser then refuses the call.

// corsMethods and corsHeaders are what a listed origin may use.
const (
	corsMethods = "GET, POST, PATCH, DELETE, OPTIONS"
	corsMaxAge  = "600"
	// corsExpose are the response headers the SDKs read (retry decisions).
	corsExpose = "Retry-After, x-should-retry, Mcp-Session-Id"
)

// corsHeaders are the request headers a listed origin may send, in lower
// case; the official SDKs also send x-stainless-* (platform, retry count)
// and the frontend headers x-openwebui-*; MCP clients (/mcp) their own.
var corsHeaders = []string{"authorization", "content-type", "accept", "last-event-id", "idempotency-key", "openai-organization", "openai-project",
	"mcp-protocol-version", "mcp-session-id"}

var corsHeaderPrefixes = []string{"x-stainless-", "x-openwebui-"}

// checkOrigins validates and normalises CORSOrigins and FrameAncestors.
func checkOrigins(cfg *Config) error {
	for i, o := range cfg.CORSOrigins {
		n, err := normalOrigin(o, true)
		if err != nil {
			return &ConfigError{Field: fmt.Sprintf("CORSOrigins[%d]", i), Reason: err.Error()}
		}
		cfg.CORSOrigins[i] = n
		if n == "*" && len(cfg.Principals) == 0 {
			return &ConfigError{Field: fmt.Sprintf("CORSOrigins[%d]", i), Reason: `"*" needs API keys: without keys it would let every web page drive the agent; list the origins instead`}
		}
	}
	for i, o := range cfg.FrameAncestors {
		n, err := normalOrigin(o, false)
		if err != nil {
			return &ConfigError{Field: fmt.Sprintf("FrameAncestors[%d]", i), Reason: err.Error()}
		}
		cfg.FrameAncestors[i] = n
	}
	return nil
}

// normalOrigin checks that o is an origin, scheme://host[:port] without
// path, query or user, and returns it in lower case. "*" (any origin) is
// accepted when star is true.
func normalOrigin(o string, star bool) (string, error) {
	if o == "*" && star {
		return o, nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(o, " ;,'\"") {
		return "", fmt.Errorf("%q is not an origin: want scheme://host[:port], e.g. https://portal.example.org", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// allowedOrigin returns the Access-Control-Allow-Origin value for the
// request's Origin, or "" when that origin is not listed.
func (s *Server) allowedOrigin(origin string) string {
	if origin == "" || len(s.cfg.CORSOrigins) == 0 {
		return ""
	}
	if slices.Contains(s.cfg.CORSOrigins, "*") {
		return "*"
	}
	if slices.Contains(s.cfg.CORSOrigins, strings.ToLower(origin)) {
		return origin
	}
	return ""
}

// cors answers preflights and adds the CORS headers for listed origins.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		allow := s.allowedOrigin(origin)
		if origin != "" {
			w.Header().Add("Vary", "Origin")
		}
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			s.preflight(w, r, allow)
			return
		}
		if allow != "" {
			w.Header().Set("Access-Control-Allow-Origin", allow)
			w.Header().Set("Access-Control-Expose-Headers", corsExpose)
		}
		next.ServeHTTP(w, r)
	})
}

// preflight answers an OPTIONS preflight: 204 with the allowed methods and
// headers for a listed origin asking for them, else 403 without any CORS
// header (the browser refuses the call).
func (s *Server) preflight(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Add("Vary", "Access-Control-Request-Method")
	w.Header().Add("Vary", "Access-Control-Request-Headers")
	method := r.Header.Get("Access-Control-Request-Method")
	if allow == "" {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrForbidden, Param: "Origin", Message: "this origin may not call the API (server.cors_origins)"})
		return
	}
	if !strings.Contains(corsMethods, method) || strings.ContainsAny(method, ", ") {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrForbidden, Param: "Access-Control-Request-Method", Message: fmt.Sprintf("method %q is not allowed (%s)", method, corsMethods)})
		return
	}
	var asked []string
	for _, h := range strings.Split(r.Header.Get("Access-Control-Request-Headers"), ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		if !corsHeaderAllowed(h) {
			s.writeError(w, &apierror.RequestError{Kind: apierror.ErrForbidden, Param: "Access-Control-Request-Headers", Message: fmt.Sprintf("header %q is not allowed", h)})
			return
		}
		asked = append(asked, h)
	}
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", allow)
	hd.Set("Access-Control-Allow-Methods", corsMethods)
	hd.Set("Access-Control-Allow-Headers", strings.Join(append(slices.Clone(corsHeaders), asked...), ", "))
	hd.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

func corsHeaderAllowed(h string) bool {
	if slices.Contains(corsHeaders, h) {
		return true
	}
	for _, p := range corsHeaderPrefixes {
		if strings.HasPrefix(h, p) && len(h) > len(p) && strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-") == "" {
			return true
		}
	}
	return false
}

// pageSecurity adds the built-in page's Content-Security-Policy: only its
// own script and style files (no inline script), requests only to this
// server, and no framing unless FrameAncestors lists the embedding sites.
func (s *Server) pageSecurity(next http.Handler) http.Handler {
	ancestors := "'none'"
	if len(s.cfg.FrameAncestors) > 0 {
		ancestors = strings.Join(s.cfg.FrameAncestors, " ")
	}
	csp := "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors " + ancestors
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if len(s.cfg.FrameAncestors) == 0 {
			h.Set("X-Frame-Options", "DENY") // for browsers without CSP level 2
		}
		next.ServeHTTP(w, r)
	})
}
