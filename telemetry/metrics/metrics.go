package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// Namespace starts every metric name.
const Namespace = "capgraph"

// DefaultThreadWindow is how recently a thread must have run a turn to
// count as active (capgraph_threads_active).
const DefaultThreadWindow = 15 * time.Minute

// Options configure Metrics. The zero value is usable.
type Options struct {
	// Providers maps a model role ("classifier", "response", …) to its
	// provider ("openai", "anthropic", …) for the provider label; a role
	// not listed is labelled "unknown".
	Providers map[string]string
	// ThreadWindow: default DefaultThreadWindow.
	ThreadWindow time.Duration
	// NoProcessMetrics leaves out the Go runtime's and the process's
	// collectors (go_*, process_*).
	NoProcessMetrics bool
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Metrics holds capgraph's metrics in a registry of its own.
type Metrics struct {
	opts Options
	reg  *prometheus.Registry

	runs          *prometheus.CounterVec
	runsActive    prometheus.Gauge
	nodeDuration  *prometheus.HistogramVec
	attempt       *prometheus.HistogramVec
	failures      *prometheus.CounterVec
	retries       *prometheus.CounterVec
	limits        *prometheus.CounterVec
	approvalsAsk  *prometheus.CounterVec
	approvalWait  *prometheus.HistogramVec
	sideEffects   *prometheus.CounterVec
	effectEvents  *prometheus.CounterVec
	denied        *prometheus.CounterVec
	abandoned     *prometheus.CounterVec
	llmCalls      *prometheus.CounterVec
	llmErrors     *prometheus.CounterVec
	llmTokens     *prometheus.CounterVec
	llmDuration   *prometheus.HistogramVec
	commit        prometheus.Histogram
	httpRequests  *prometheus.CounterVec
	httpDurations *prometheus.HistogramVec

	mu        sync.Mutex
	threads   map[string]time.Time // thread → last turn start
	approvals map[string]time.Time // pending approval (thread, id) → expiry (zero: none)
}

// Buckets of durations in seconds: from a millisecond (a store commit, a
// capability reading a value) to ten minutes (a turn's model calls).
var (
	fastBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	slowBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	waitBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}
)

// New returns the metrics, registered in a new registry.
func New(opts Options) *Metrics {
	if opts.ThreadWindow <= 0 {
		opts.ThreadWindow = DefaultThreadWindow
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Metrics{opts: opts, reg: prometheus.NewRegistry(), threads: map[string]time.Time{}, approvals: map[string]time.Time{}}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(h)
		return h
	}
	m.runs = counter("runs_total", "Runs (turns and resumes) ended, by outcome: answered, clarified, error_report, rejected, interrupted (waiting for approval), failed, canceled.", "outcome")
	m.runsActive = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "runs_active", Help: "Runs in progress in this process."})
	m.reg.MustRegister(m.runsActive)
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "threads_active",
		Help: "Threads that started a run in this process within the thread window (15 minutes by default)."}, m.activeThreads))
	m.nodeDuration = histogram("node_duration_seconds", "Wall-clock time of a node (infrastructure node or capability), by node.", slowBuckets, "node")
	m.attempt = histogram("capability_attempt_duration_seconds", "Wall-clock time of one attempt of a plan step, by capability and outcome (ok, failed).", slowBuckets, "capability", "outcome")
	m.failures = counter("failures_total", "Failed attempts, by severity and the recovery the router gave them: retry, fallback, replan, reclassify, error_node, escalate, abort, none.", "severity", "recovery")
	m.retries = counter("retries_total", "Retries scheduled, by node.", "node")
	m.limits = counter("limits_exhausted_total", "Turns sent to the error node by a limit or budget, by its name (max_attempts, max_planning_attempts, max_execution_time, …).", "limit")
	m.approvalsAsk = counter("approvals_requested_total", "Approvals asked of a human, by kind (plan, step, escalation).", "kind")
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "approvals_pending",
		Help: "Approvals this process asked for that no run of this process has answered and that have not expired."}, m.pendingApprovals))
	m.approvalWait = histogram("approval_wait_seconds", "Time from an approval's question to its answer, by kind and decision (approved, rejected).", waitBuckets, "kind", "decision")
	m.sideEffects = counter("side_effects_total", "Attempts of side-effecting steps that ended, by capability and write outcome (refused, failed, confirmed, mismatch, unconfirmed, unrequested).", "capability", "outcome")
	m.effectEvents = counter("side_effect_events_total", "Audit events of side-effecting steps, by capability and event (planned, unrequested, refused, asked, approved, rejected, expired, started, ended).", "capability", "event")
	m.denied = counter("capability_denied_total", "Capabilities refused to a caller that may not use them, by capability.", "capability")
	m.abandoned = counter("capability_abandoned_total", "Capability attempts abandoned because they did not return once cancelled (their deadline passed, or the run stopped), by capability; a late result is discarded.", "capability")
	m.llmCalls = counter("llm_calls_total", "LLM calls, by model role and provider.", "role", "provider")
	m.llmErrors = counter("llm_errors_total", "LLM calls that failed, by model role and provider.", "role", "provider")
	m.llmTokens = counter("llm_tokens_total", "LLM tokens, by model role, provider and direction (prompt, completion).", "role", "provider", "direction")
	m.llmDuration = histogram("llm_call_duration_seconds", "Wall-clock time of an LLM call, by model role and provider.", slowBuckets, "role", "provider")
	m.commit = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "store_commit_duration_seconds",
		Help: "Time the checkpoint store took to write a step's checkpoint.", Buckets: fastBuckets})
	m.reg.MustRegister(m.commit)
	m.httpRequests = counter("http_requests_total", "HTTP requests answered, by route pattern (\"POST /v1/chat/completions\"; \"unmatched\") and status code.", "route", "status")
	m.httpDurations = histogram("http_request_duration_seconds", "Time to answer an HTTP request (a stream: until it ends), by route pattern.", slowBuckets, "route")
	if !opts.NoProcessMetrics {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Registry returns the registry (to add an application's own metrics).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// ObserveRequest counts an answered HTTP request (server.Config.ObserveRequest).
func (m *Metrics) ObserveRequest(route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.httpDurations.WithLabelValues(route).Observe(d.Seconds())
}

func (m *Metrics) activeThreads() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	since := m.opts.Now().Add(-m.opts.ThreadWindow)
	for t, at := range m.threads {
		if at.Before(since) {
			delete(m.threads, t)
		}
	}
	return float64(len(m.threads))
}

func (m *Metrics) pendingApprovals() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opts.Now()
	for id, exp := range m.approvals {
		if !exp.IsZero() && exp.Before(now) {
			delete(m.approvals, id)
		}
	}
	return float64(len(m.approvals))
}

func (m *Metrics) provider(role string) string {
	if p := m.opts.Providers[role]; p != "" {
		return p
	}
	return "unknown"
}

// StartRun observes a run (agent.Observer).
func (m *Metrics) StartRun(_ context.Context, info agent.RunInfo) agent.RunObserver {
	m.runsActive.Inc()
	m.mu.Lock()
	m.threads[info.Thread] = m.opts.Now()
	if a := info.Answer; a != nil {
		delete(m.approvals, info.Thread+"\x00"+a.ID)
	}
	m.mu.Unlock()
	if a := info.Answer; a != nil && !a.Asked.IsZero() {
		decision := "rejected"
		if a.Approved {
			decision = "approved"
		}
		m.approvalWait.WithLabelValues(string(a.Kind), decision).Observe(a.At.Sub(a.Asked).Seconds())
	}
	return &run{m: m, thread: info.Thread, pending: map[string]string{}}
}

type run struct {
	m       *Metrics
	thread  string
	kind    state.MessageKind
	pending map[string]string // node → severity of a recorded failure awaiting its route
	ended   bool
}

func (r *run) TraceContext() agent.TraceContext { return agent.TraceContext{} }

// recovery names where a recorded failure of node went, from the route.
func recovery(node string, to []string) string {
	if len(to) == 0 {
		return "none"
	}
	switch to[0] {
	case state.NodeOrchestrator:
		return "replan"
	case state.NodeClassifier:
		return "reclassify"
	case state.NodeError:
		return "error_node"
	case node:
		return "retry"
	}
	return "other"
}

func (r *run) Event(e agent.Event) {
	m := r.m
	switch e.Type {
	case agent.EventNodeEnd:
		m.nodeDuration.WithLabelValues(e.Node).Observe(e.Duration.Seconds())
	case agent.EventStepEnd:
		outcome := "ok"
		if e.Err != "" {
			outcome = "failed"
		}
		m.attempt.WithLabelValues(e.Capability, outcome).Observe(e.Duration.Seconds())
	case agent.EventFailure:
		f := detail(e).Failure
		switch f.Action {
		case "recorded":
			r.pending[e.Node] = f.Severity
		default:
			m.failures.WithLabelValues(f.Severity, f.Action).Inc()
		}
	case agent.EventRoute:
		if sev, ok := r.pending[e.Node]; ok {
			delete(r.pending, e.Node)
			m.failures.WithLabelValues(sev, recovery(e.Node, detail(e).To)).Inc()
		}
	case agent.EventRetry:
		m.retries.WithLabelValues(e.Node).Inc()
	case agent.EventErrorCause:
		if detail(e).Failure.Limit != "" {
			m.limits.WithLabelValues(detail(e).Failure.Limit).Inc()
		}
	case agent.EventApprovalRequired:
		if ap := e.Approval; ap != nil {
			m.approvalsAsk.WithLabelValues(string(ap.Kind)).Inc()
			m.mu.Lock()
			m.approvals[r.thread+"\x00"+ap.ID] = ap.Expires
			m.mu.Unlock()
		}
	case agent.EventAudit:
		m.effectEvents.WithLabelValues(e.Audit.Capability, e.Audit.Event).Inc()
		if e.Audit.Outcome != "" {
			m.sideEffects.WithLabelValues(e.Audit.Capability, string(e.Audit.Outcome)).Inc()
		}
	case agent.EventDenied:
		m.denied.WithLabelValues(e.Capability).Inc()
	case agent.EventAbandoned:
		m.abandoned.WithLabelValues(e.Capability).Inc()
	case agent.EventModelCall:
		c := e.Call
		p := m.provider(c.Role)
		m.llmCalls.WithLabelValues(c.Role, p).Inc()
		if e.Err != "" {
			m.llmErrors.WithLabelValues(c.Role, p).Inc()
		}
		m.llmTokens.WithLabelValues(c.Role, p, "prompt").Add(float64(c.Usage.PromptTokens))
		m.llmTokens.WithLabelValues(c.Role, p, "completion").Add(float64(c.Usage.CompletionTokens))
		m.llmDuration.WithLabelValues(c.Role, p).Observe(e.Duration.Seconds())
	case agent.EventCommit:
		m.commit.Observe(e.Duration.Seconds())
	case agent.EventMessage:
		if e.Message != nil {
			r.kind = e.Message.Kind
		}
	case agent.EventDone:
		r.ended = true
		m.runs.WithLabelValues(outcome(e.Status, r.kind)).Inc()
	}
}

// outcome is a finished run's runs_total label.
func outcome(status agent.RunStatus, kind state.MessageKind) string {
	if status != agent.RunAnswered {
		return string(status)
	}
	switch kind {
	case state.KindClarification:
		return "clarified"
	case state.KindErrorReport:
		return "error_report"
	case state.KindRejected:
		return "rejected"
	}
	return "answered"
}

func (r *run) End() {
	for node, sev := range r.pending {
		r.m.failures.WithLabelValues(sev, "none").Inc()
		delete(r.pending, node)
	}
	if !r.ended {
		// The caller stopped reading: the run was canceled.
		r.m.runs.WithLabelValues(string(agent.RunCanceled)).Inc()
	}
	r.m.runsActive.Dec()
}

// detail is what an observer-only event carries (none: zero).
func detail(e agent.Event) agent.Detail {
	if e.Detail != nil {
		return *e.Detail
	}
	return agent.Detail{}
}
