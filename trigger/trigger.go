package trigger

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/runstore"
)

// The request headers of a trigger call.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, keyed with the
	// trigger's secret, of the timestamp, a dot and the body.
	HeaderSignature = "X-Capgraph-Signature"
	// HeaderTimestamp is the time of the call in Unix seconds; a call more
	// than MaxSkew away from the server's clock is refused (a replayed
	// call is too old).
	HeaderTimestamp = "X-Capgraph-Timestamp"
)

// MaxSkew is how far a call's timestamp may be from the server's clock.
const MaxSkew = 5 * time.Minute

// DefaultRatePerMinute is a trigger's rate limit when it states none.
const DefaultRatePerMinute = 10

// DefaultMaxBodyBytes caps a payload.
const DefaultMaxBodyBytes = 64 << 10

// Sign returns the HeaderSignature value of body sent at ts with secret:
// what a caller computes.
func Sign(secret []byte, ts time.Time, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	fmt.Fprintf(mac, "%d.", ts.Unix())
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Trigger is one webhook that starts a run.
type Trigger struct {
	// Name is the last segment of its URL (lower_snake_case).
	Name string
	// Secret keys the HMAC signature; at least 16 bytes.
	Secret []byte
	// Input is the run's message: a text/template over the JSON payload
	// ("Alarm {{.alarm}} on {{.device}}: what is its state?"). A key the
	// payload lacks refuses the call (400).
	Input string
	// AllowedCapabilities are the only capabilities the run may use; nil
	// allows all.
	AllowedCapabilities []string
	// Writes lets the run's side-effecting steps go ahead under the
	// configuration's write switch and approval policy (a write waits for
	// a human's approval); false turns writes off for the run.
	Writes bool
	// RatePerMinute bounds accepted calls; 0 means DefaultRatePerMinute.
	RatePerMinute int
	// Owner is whom the runs belong to: the API key whose holder lists
	// their threads, streams them and answers their approvals (see
	// Owner).
	Owner Owner

	tmpl *template.Template
}

// Owner names the API key (a server principal) a trigger's runs belong
// to: Principal is the key's name, Tenant its tenant ("" is the server's
// "default"). A zero Owner is the server's choice: the keyless caller of
// a server without API keys, else a principal of the trigger's own that
// no key holds.
type Owner struct {
	Tenant    string
	Principal string
}

// Starter starts a run for owner in the background and returns its id,
// or an error when it cannot start. A server passes its own
// (server.Config.Triggers), so that the run is one of its runs: listed,
// streamed and stopped like any other; RunnerStarter starts runs on an
// agent.Runner alone.
type Starter interface {
	Start(ctx context.Context, owner Owner, req agent.TurnRequest) (runID string, err error)
}

// StatusCoder is implemented by a Starter's error whose reason has an
// HTTP status of its own (the owner's thread quota: 403, its run limit:
// 429); the call is answered with it. Any other error is a 503.
type StatusCoder interface {
	error
	StatusCode() int
}

// StarterFunc is a function as a Starter.
type StarterFunc func(ctx context.Context, owner Owner, req agent.TurnRequest) (runID string, err error)

// Start calls f.
func (f StarterFunc) Start(ctx context.Context, owner Owner, req agent.TurnRequest) (string, error) {
	return f(ctx, owner, req)
}

// Config configures a Handler.
type Config struct {
	Triggers []Trigger
	Starter  Starter
	// Rate counts calls across replicas when the store can
	// (runstore.RateCounter: PostgreSQL); nil counts in this process.
	Rate runstore.RateCounter
	// Now is the clock (timestamps, the local rate); default time.Now.
	Now func() time.Time
	// MaxBodyBytes: default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	Logger       logging.Logger
}

// Handler serves POST /api/triggers/{name}.
type Handler struct {
	cfg      Config
	triggers map[string]*Trigger
	local    *localRate
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// New checks the triggers and compiles their templates.
func New(cfg Config) (*Handler, error) {
	if cfg.Starter == nil {
		return nil, errors.New("trigger: Config.Starter is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = logging.Nop()
	}
	h := &Handler{cfg: cfg, triggers: map[string]*Trigger{}, local: &localRate{buckets: map[string]*bucket{}}}
	for i := range cfg.Triggers {
		t := cfg.Triggers[i]
		if !nameRE.MatchString(t.Name) || h.triggers[t.Name] != nil {
			return nil, fmt.Errorf("trigger: name %q is not lower_snake_case or is used twice", t.Name)
		}
		if len(t.Secret) < 16 {
			return nil, fmt.Errorf("trigger %s: the secret has %d bytes; use at least 16", t.Name, len(t.Secret))
		}
		tmpl, err := template.New(t.Name).Option("missingkey=error").Parse(t.Input)
		if err != nil {
			return nil, fmt.Errorf("trigger %s: input template: %v", t.Name, err)
		}
		if strings.TrimSpace(t.Input) == "" {
			return nil, fmt.Errorf("trigger %s: no input", t.Name)
		}
		if t.RatePerMinute < 0 {
			return nil, fmt.Errorf("trigger %s: rate_per_minute is negative", t.Name)
		}
		if t.RatePerMinute == 0 {
			t.RatePerMinute = DefaultRatePerMinute
		}
		t.tmpl = tmpl
		h.triggers[t.Name] = &t
	}
	return h, nil
}

// Accepted is the body of a 202.
type Accepted struct {
	Trigger string `json:"trigger"`
	RunID   string `json:"run_id"`
	Thread  string `json:"thread"`
}

type problem struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client is gone
}

func (h *Handler) refuse(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, problem{Error: fmt.Sprintf(format, args...)})
}

// ServeHTTP answers a trigger call: 202 with the run id once the run has
// started; 401 (nothing runs) for a missing or wrong signature or a stale
// timestamp; 404 for an unknown trigger; 400 for a payload that is not a
// JSON object or lacks what the input needs; 413 for a payload too large;
// 429 with Retry-After past the rate limit; when the run cannot start,
// the status its error gives (StatusCoder), else 503.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, http.StatusMethodNotAllowed, "a trigger is called with POST")
		return
	}
	name := r.PathValue("name")
	if name == "" {
		name = r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	}
	t, ok := h.triggers[name]
	if !ok {
		h.refuse(w, http.StatusNotFound, "no trigger %q", name)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.refuse(w, http.StatusRequestEntityTooLarge, "the payload is larger than %d bytes", mbe.Limit)
			return
		}
		h.refuse(w, http.StatusBadRequest, "cannot read the payload: %v", err)
		return
	}
	// The signature first: an unsigned caller learns nothing more.
	if why := h.verify(t, r.Header, body); why != "" {
		h.cfg.Logger.Warn("trigger: refused", "trigger", t.Name, "why", why)
		h.refuse(w, http.StatusUnauthorized, "%s", why)
		return
	}
	var payload map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&payload); err != nil || payload == nil {
		h.refuse(w, http.StatusBadRequest, "the payload must be a JSON object")
		return
	}
	var input strings.Builder
	if err := t.tmpl.Execute(&input, payload); err != nil {
		h.refuse(w, http.StatusBadRequest, "the payload does not fit the trigger's input: %s", templateProblem(err))
		return
	}
	if ok, wait, err := h.take(r.Context(), t); err != nil {
		h.refuse(w, http.StatusServiceUnavailable, "cannot count the trigger's rate: %v", err)
		return
	} else if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		h.refuse(w, http.StatusTooManyRequests, "trigger %s is limited to %d calls a minute", t.Name, t.RatePerMinute)
		return
	}
	thread := "trigger-" + t.Name + "-" + uuid.NewString()
	req := agent.TurnRequest{Thread: thread, Input: input.String(), By: "trigger:" + t.Name,
		Metadata: map[string]string{"trigger": t.Name}}
	if t.AllowedCapabilities != nil {
		req.AllowedCapabilities = slices.Clone(t.AllowedCapabilities)
	}
	if !t.Writes {
		off := false
		req.Options = &agent.TurnOptions{WritesEnabled: &off}
	}
	id, err := h.cfg.Starter.Start(context.WithoutCancel(r.Context()), t.Owner, req)
	if err != nil {
		code := http.StatusServiceUnavailable
		if sc, ok := errors.AsType[StatusCoder](err); ok && sc.StatusCode() >= 400 && sc.StatusCode() < 600 {
			code = sc.StatusCode()
		}
		h.refuse(w, code, "the run could not start: %v", err)
		return
	}
	h.cfg.Logger.Info("trigger: run started", "trigger", t.Name, "run", id, "thread", thread)
	writeJSON(w, http.StatusAccepted, Accepted{Trigger: t.Name, RunID: id, Thread: thread})
}

// verify checks the call's timestamp and signature; "" when they hold.
func (h *Handler) verify(t *Trigger, hdr http.Header, body []byte) string {
	sig, ts := hdr.Get(HeaderSignature), hdr.Get(HeaderTimestamp)
	if sig == "" || ts == "" {
		return "the call is not signed: send " + HeaderTimestamp + " and " + HeaderSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return HeaderTimestamp + " is not a Unix time in seconds"
	}
	at := time.Unix(sec, 0)
	if d := h.cfg.Now().Sub(at); d > MaxSkew || d < -MaxSkew {
		return fmt.Sprintf("%s is %s from the server's clock (at most %s): a replay, or a wrong clock", HeaderTimestamp, d.Round(time.Second), MaxSkew)
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(t.Secret, at, body))) {
		return "the signature does not match"
	}
	return ""
}

// templateProblem says which key the payload lacks, without the
// template's internals.
func templateProblem(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "map has no entry for key "); i >= 0 {
		return "it has no " + strings.TrimPrefix(msg[i:], "map has no entry for key ")
	}
	return msg
}

// take takes a token of t's rate.
func (h *Handler) take(ctx context.Context, t *Trigger) (bool, time.Duration, error) {
	if h.cfg.Rate != nil {
		return h.cfg.Rate.TakeToken(ctx, "trigger/"+t.Name, t.RatePerMinute)
	}
	ok, wait := h.local.take(t.Name, t.RatePerMinute, h.cfg.Now())
	return ok, wait, nil
}

// localRate is a token bucket per trigger, in this process.
type localRate struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func (l *localRate) take(key string, perMinute int, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: float64(perMinute), at: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(float64(perMinute), b.tokens+now.Sub(b.at).Minutes()*float64(perMinute))
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / float64(perMinute) * float64(time.Minute))
}

// RunnerStarter starts runs on r, each on a goroutine of its own that
// reads it to its end; the run id is the agent's (its run_start event),
// the owner is written in the thread's metadata. Runs started so are not
// in a server's run registry and nothing joins their goroutines: a
// server that mounts the handler passes its own Starter
// (server.Config.Triggers), so they stream, list and stop like its other
// runs. RunnerStarter is for a handler without a server (tests, a
// process of its own).
func RunnerStarter(r agent.Runner, logger logging.Logger) Starter {
	if logger == nil {
		logger = logging.Nop()
	}
	return runnerStarter{r: r, log: logger}
}

type runnerStarter struct {
	r   agent.Runner
	log logging.Logger
}

func (s runnerStarter) Start(ctx context.Context, owner Owner, req agent.TurnRequest) (string, error) {
	if owner != (Owner{}) {
		req.Metadata = maps.Clone(req.Metadata)
		if req.Metadata == nil {
			req.Metadata = map[string]string{}
		}
		req.Metadata[agent.MetaTenant], req.Metadata[agent.MetaOwner] = owner.Tenant, cmp.Or(owner.Principal, req.By)
	}
	started := make(chan struct {
		id  string
		err error
	}, 1)
	go func() {
		sent := false
		send := func(id string, err error) {
			if !sent {
				sent = true
				started <- struct {
					id  string
					err error
				}{id, err}
			}
		}
		for ev, err := range s.r.Run(ctx, req) {
			if err != nil {
				send("", err)
				s.log.Warn("trigger: run failed", "thread", req.Thread, "error", err)
				continue
			}
			if ev.Type == agent.EventRunStart || ev.RunID != "" {
				send(ev.RunID, nil)
			}
		}
		send("", errors.New("the run ended before it started"))
	}()
	select {
	case r := <-started:
		return r.id, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
