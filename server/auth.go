package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
)

// Headers a trusted frontend (Open WebUI with
// ENABLE_FORWARD_USER_INFO_HEADERS=true) forwards. Ignored from other keys.
const (
	headerChatID = "X-OpenWebUI-Chat-Id"
	headerUserID = "X-OpenWebUI-User-Id"
)

// caller is the authenticated identity of a request.
type caller struct {
	Principal Principal
	// User is the end user forwarded by a trusted frontend, else "".
	User string
	// ChatID is the chat id forwarded by a trusted frontend, else "".
	ChatID string
	// Trace is the request's W3C trace context (traceparent, tracestate):
	// the runs the request starts belong to that trace.
	Trace agent.TraceContext
}

// key identifies the principal for run limits.
func (c caller) key() string { return c.Principal.Tenant + "\x00" + c.Principal.Name }

type callerKey struct{}

func callerFrom(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// keyring holds the principals' key digests.
type keyring struct {
	principals []Principal
	digests    [][]byte
}

func newKeyring(ps []Principal) *keyring {
	k := &keyring{principals: ps}
	for _, p := range ps {
		d, _ := hex.DecodeString(strings.ToLower(p.KeySHA256)) // validated in withDefaults
		k.digests = append(k.digests, d)
	}
	return k
}

// lookup finds the principal of a bearer key. Every digest is compared (in
// constant time) so the time taken says nothing about which key matched.
func (k *keyring) lookup(key string) (Principal, bool) {
	d := sha256.Sum256([]byte(key))
	found := -1
	for i, want := range k.digests {
		if subtle.ConstantTimeCompare(d[:], want) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return k.principals[found], true
}

// anonymous is the principal of every request when no keys are configured
// (loopback only). It is not a trusted frontend.
var anonymous = Principal{Name: "local", Tenant: "default"}

// authenticate resolves the caller of r, or reports apierror.ErrUnauthorized.
func (s *Server) authenticate(r *http.Request) (caller, error) {
	var p Principal
	if len(s.keys.principals) == 0 {
		p = anonymous
	} else {
		auth := r.Header.Get("Authorization")
		scheme, key, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
			return caller{}, &apierror.RequestError{Kind: apierror.ErrUnauthorized, Message: "missing API key: send Authorization: Bearer <key>"}
		}
		var found bool
		if p, found = s.keys.lookup(strings.TrimSpace(key)); !found {
			return caller{}, &apierror.RequestError{Kind: apierror.ErrUnauthorized, Message: "invalid API key"}
		}
	}
	c := caller{Principal: p}
	if p.TrustedFrontend {
		c.User = strings.TrimSpace(r.Header.Get(headerUserID))
		c.ChatID = strings.TrimSpace(r.Header.Get(headerChatID))
		// What the store keeps and threads are named by must be text:
		// a 400 naming the header, not the store's failure later.
		if err := checkForwarded(headerUserID, c.User); err != nil {
			return caller{}, err
		}
		if err := checkForwarded(headerChatID, c.ChatID); err != nil {
			return caller{}, err
		}
	}
	return c, nil
}

// requireAuth wraps h so it runs only for authenticated callers.
func (s *Server) requireAuth(h http.HandlerFunc, onErr func(http.ResponseWriter, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.authenticate(r)
		if err != nil {
			onErr(w, err)
			return
		}
		if ok, after := s.allowRequest(r.Context(), c); !ok {
			onErr(w, &apierror.RateLimitError{Limit: s.cfg.RequestsPerMinute, RetryAfter: after})
			return
		}
		c.Trace = traceOf(r)
		h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}
}

// traceOf reads the request's W3C trace context headers. The tracing
// observer parses them (an invalid one starts a new trace); oversized ones
// are dropped here (the specification's traceparent is 55 characters, a
// tracestate at most 512).
func traceOf(r *http.Request) agent.TraceContext {
	tc := agent.TraceContext{TraceParent: r.Header.Get("traceparent"), TraceState: r.Header.Get("tracestate")}
	if len(tc.TraceParent) > 256 || tc.TraceParent == "" {
		return agent.TraceContext{}
	}
	if len(tc.TraceState) > 512 {
		tc.TraceState = ""
	}
	return tc
}
