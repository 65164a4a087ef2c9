package server

import (
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/turns"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/server/allowedhost"
	"github.com/capgraph/capgraph/server/internal/apierror"
)

// No browser acts for the operator (docs/safety.md). A page on another
// site can make the operator's browser send simple requests (a form, a
// no-cors fetch with text/plain) that need no preflight, and a page whose
// host name its author re-points at this server (DNS rebinding) can read
// the answers as its own. Without API keys nothing else would stop either,
// and keys are bearer tokens a page never has, so the rules below hold
// with and without keys:
//
//   - every request's Host must name this server (checkHost, 421);
//   - a request that may change something (any method but GET, HEAD and
//     OPTIONS) must come from this server's own page, a listed CORS
//     origin or no browser at all (checkWrite, 403), and carry its body as
//     application/json, the type of every API here, MCP's streamable HTTP
//     included (415). No GET changes anything.

// hostGuard is the parsed Host rule of a server.
type hostGuard struct {
	hosts allowedhost.List
}

// newHostGuard parses cfg.AllowedHosts and adds the names the config
// already says the server is reached by: the host of a listen address that
// is not a wildcard, and the host of PublicURL. It refuses "*" without API
// keys (the Host check is then all that keeps a rebinding page out) and a
// wildcard listen address whose clients would all be refused.
func newHostGuard(cfg *Config) (*hostGuard, error) {
	l, err := allowedhost.ParseList(cfg.AllowedHosts)
	if err != nil {
		var ee *allowedhost.EntryError
		if errors.As(err, &ee) {
			return nil, &ConfigError{Field: fmt.Sprintf("AllowedHosts[%d]", ee.Index), Reason: ee.Err.Error()}
		}
		return nil, &ConfigError{Field: "AllowedHosts", Reason: err.Error()}
	}
	if l.Any() && len(cfg.Principals) == 0 {
		return nil, &ConfigError{Field: "AllowedHosts", Reason: `"*" needs API keys: without keys the Host check is what keeps a DNS-rebinding page out; list the host names instead`}
	}
	named := len(l) > 0
	if host, _, err := net.SplitHostPort(cfg.Addr); err == nil && !wildcardHost(host) {
		if p, err := allowedhost.Parse(strings.Trim(host, "[]")); err == nil {
			l, named = append(l, p), true
		} else if p, err := allowedhost.Parse("[" + host + "]"); err == nil {
			l, named = append(l, p), true
		}
	}
	if cfg.PublicURL != "" {
		if u, err := url.Parse(cfg.PublicURL); err == nil {
			if p, err := allowedhost.Parse(u.Host); err == nil {
				l, named = append(l, p), true
			}
		}
	}
	if !named && !isLoopback(cfg.Addr) {
		return nil, &ConfigError{Field: "AllowedHosts", Reason: fmt.Sprintf("the server listens on %s, beyond this machine, but answers only requests to localhost: "+
			"list the names clients reach it by (the Host they send, e.g. capgraph.example.org or 10.0.0.5) in server.allowed_hosts, or \"*\" for any", cfg.Addr)}
	}
	return &hostGuard{hosts: l}, nil
}

// wildcardHost reports whether a listen address's host means every
// interface.
func wildcardHost(host string) bool {
	return host == "" || host == "0.0.0.0" || host == "::" || host == "[::]"
}

// checkHost answers 421 to a request whose Host does not name this server,
// on every route: the page, the APIs, /mcp, /metrics, health.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts.hosts.Allows(r.Host) {
			s.refuse(w, r, &apierror.RequestError{Kind: apierror.ErrUnknownHost, Param: "Host", Message: fmt.Sprintf(
				"%s is not a name of this server: it answers to localhost and the names in server.allowed_hosts (a guard against DNS rebinding)", turns.QuoteForClient(r.Host))})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request the guards refuse and, over HTTP/1, closes the
// connection, so that its body is never read (net/http would drain it to
// keep the connection). HTTP/2 streams end on their own.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	s.writeError(w, err)
}

// safeMethod reports whether a method never changes anything here.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// checkWrite refuses a request that may change something when a browser
// sent it for another site's page (403), or when its body is not JSON
// (415).
func (s *Server) checkWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if safeMethod(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		if err := s.crossOrigin(r); err != nil {
			s.refuse(w, r, err)
			return
		}
		if err := jsonBody(r); err != nil {
			s.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// crossOrigin reports a request a browser sent from a page that is not
// this server's own and not listed in CORSOrigins. The browser says where
// the page is: Sec-Fetch-Site (every current browser, over HTTPS and to
// localhost), else Origin (sent with every POST, PATCH and DELETE a page
// makes). A request with neither is no page's: curl, an SDK, a frontend's
// backend.
func (s *Server) crossOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	site := r.Header.Get("Sec-Fetch-Site")
	if site == "same-origin" || site == "none" { // "none": the user's own navigation
		return nil
	}
	if origin == "" {
		if site == "" {
			return nil
		}
		return &apierror.RequestError{Kind: apierror.ErrCrossOrigin, Param: "Sec-Fetch-Site", Message: fmt.Sprintf(
			"a %s page without an Origin may not change anything here (%s)", turns.QuoteForClient(site), r.Method)}
	}
	if s.trustedOrigin(origin) || site == "" && sameHost(origin, r.Host) {
		return nil
	}
	return &apierror.RequestError{Kind: apierror.ErrCrossOrigin, Param: "Origin", Message: fmt.Sprintf(
		"a page on %s may not change anything here (%s): only this server's own page and the origins in server.cors_origins may", turns.QuoteForClient(origin), r.Method)}
}

// trustedOrigin reports an origin whose pages may call every route: one
// listed in CORSOrigins (or all, with "*"), or PublicURL's.
func (s *Server) trustedOrigin(origin string) bool {
	if s.allowedOrigin(origin) != "" {
		return true
	}
	return s.cfg.PublicURL != "" && strings.EqualFold(origin, publicOrigin(s.cfg.PublicURL))
}

func publicOrigin(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// sameHost reports whether origin's host and port are the request's Host:
// the page was served by this server (its scheme is the proxy's to know).
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	oh, op, ok1 := allowedhost.Split(u.Host)
	rh, rp, ok2 := allowedhost.Split(host)
	if !ok1 || !ok2 || oh != rh {
		return false
	}
	def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	if op == "" {
		op = def
	}
	if rp == "" {
		rp = def
	}
	return op == rp
}

// jsonContentTypes are the media types a request body may have: every API
// here (OpenAI, native, AG-UI, MCP's streamable HTTP) sends JSON. The three
// types a page may send without a preflight (text/plain, forms) are not.
var jsonContentTypes = []string{"application/json"}

// jsonBody refuses a request body that does not say it is JSON. A request
// without a body (a cancel, a delete) needs no Content-Type, but one that
// names another type is refused all the same.
func jsonBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.ContentLength == 0 {
			return nil
		}
		return &apierror.RequestError{Kind: apierror.ErrUnsupportedMediaType, Param: "Content-Type", Message: fmt.Sprintf(
			"a %s body needs Content-Type: application/json", r.Method)}
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !slices.Contains(jsonContentTypes, mt) {
		return &apierror.RequestError{Kind: apierror.ErrUnsupportedMediaType, Param: "Content-Type", Message: fmt.Sprintf(
			"%s is not accepted: send the body as application/json", turns.QuoteForClient(ct))}
	}
	return nil
}
