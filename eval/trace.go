package eval

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

// Trace is what one turn did, read from the agent's events (agent.Run's
// stream and the observer-only failure and route events) and the state
// the turn ended with.
type Trace struct {
	Input  string          `json:"input"`
	Status agent.RunStatus `json:"status"`
	// Selected is the classifier's last selection.
	Selected []string `json:"selected,omitempty"`
	// Plans are the capabilities of each plan's steps, respond and clarify
	// left out.
	Plans [][]string `json:"plans,omitempty"`
	// Executed are the capabilities whose steps started, in order of first start.
	Executed []string `json:"executed,omitempty"`
	// SideEffects are the capabilities whose side effect was started (an
	// audit record "started": the call to the outside world was made).
	SideEffects []string      `json:"side_effects,omitempty"`
	Failures    []FailureStep `json:"failures,omitempty"`
	Retries     int           `json:"retries"`
	Recovered   bool          `json:"recovered,omitempty"`
	// PlansCreated and Reclassifications are the turn's counters.
	PlansCreated      int    `json:"plans_created"`
	Reclassifications int    `json:"reclassifications"`
	Limit             string `json:"limit,omitempty"`
	// Approval is the last approval the turn asked for.
	Approval *state.Approval `json:"approval,omitempty"`
	Message  *state.Message  `json:"message,omitempty"`
	// ModelCalls and Tokens are the turn's model calls and tokens.
	ModelCalls int           `json:"model_calls"`
	Tokens     int           `json:"tokens"`
	Duration   time.Duration `json:"duration"`
	// Fatal is the text of a FATAL failure that ended the run.
	Fatal string `json:"fatal,omitempty"`
	// failuresUnknown: the events came from a server, which sends no
	// failure events (Failures is empty whatever happened).
	failuresUnknown bool
	// pendingRoute: the failures recorded whose route is not seen yet.
	pendingRoute []int
}

// Plan returns the last plan's capabilities.
func (t *Trace) Plan() []string {
	if len(t.Plans) == 0 {
		return nil
	}
	return t.Plans[len(t.Plans)-1]
}

// Answer is the turn's assistant message text ("" when none).
func (t *Trace) Answer() string {
	if t.Message == nil {
		return ""
	}
	return t.Message.Content
}

// add records one event of the turn.
func (t *Trace) add(e agent.Event) {
	switch e.Type {
	case agent.EventCapabilities:
		t.Selected = slices.Clone(e.Capabilities)
	case agent.EventPlan:
		if e.Plan != nil {
			var caps []string
			for _, st := range e.Plan.Steps {
				if st.Capability != state.NodeRespond && st.Capability != state.NodeClarify {
					caps = append(caps, st.Capability)
				}
			}
			t.Plans = append(t.Plans, caps)
		}
	case agent.EventStepStart:
		if !slices.Contains(t.Executed, e.Capability) {
			t.Executed = append(t.Executed, e.Capability)
		}
	case agent.EventRetry:
		t.Retries++
	case agent.EventAudit:
		// A server sends the records that end an attempt ("ended"), the
		// agent every record: either says the call was made.
		if a := e.Audit; a != nil && (a.Event == agent.AuditStarted || a.Event == agent.AuditEnded) && !slices.Contains(t.SideEffects, a.Capability) {
			t.SideEffects = append(t.SideEffects, a.Capability)
		}
	case agent.EventApprovalRequired:
		t.Approval = e.Approval
	case agent.EventMessage:
		t.Message = e.Message
	case agent.EventModelCall:
		t.ModelCalls++
	case agent.EventUsage:
		if e.Usage != nil {
			t.Tokens = max(t.Tokens, e.Usage.TotalTokens)
		}
	case agent.EventDone:
		t.Status = e.Status
	case agent.EventFailure:
		if e.Detail == nil {
			return
		}
		f := e.Detail.Failure
		fs := FailureStep{Severity: f.Severity, Capability: e.Capability, Kind: f.Kind}
		switch f.Action {
		case "retry":
			fs.Went = WentRetry
		case "fallback":
			fs.Went = WentFallback
		case "escalate":
			fs.Went = WentEscalate
		case "abort":
			fs.Went = WentAbort
		default:
			t.pendingRoute = append(t.pendingRoute, len(t.Failures))
		}
		t.Failures = append(t.Failures, fs)
	case agent.EventRoute:
		if len(t.pendingRoute) == 0 || e.Detail == nil || len(e.Detail.To) == 0 {
			return
		}
		went := wentTo(e.Detail.To[0])
		for _, i := range t.pendingRoute {
			t.Failures[i].Went = went
		}
		t.pendingRoute = nil
	}
}

// wentTo names where the router sent a recorded failure.
func wentTo(node string) string {
	switch node {
	case state.NodeOrchestrator:
		return WentReplan
	case state.NodeClassifier:
		return WentReclassify
	case state.NodeError:
		return WentErrorNode
	}
	return node
}

// finish reads what the events do not say from the state the turn ended with.
func (t *Trace) finish(s state.State) {
	c := s.Turn.Control
	t.PlansCreated, t.Reclassifications, t.Limit = c.PlansCreated, c.Reclassifications, c.LimitExceeded
	if p := s.Turn.Plan; p != nil {
		for _, st := range p.Steps {
			if st.Recovered {
				t.Recovered = true
			}
		}
	}
	if t.Message != nil && t.Message.Report != nil && t.Limit == "" {
		t.Limit = t.Message.Report.Failure.Limit
	}
}

// observer hands the observer-only events of each thread's runs to its
// current trace; it passes every event on to the agent's own observer.
type observer struct {
	next   agent.Observer
	mu     sync.Mutex
	traces map[string]*Trace
}

func (o *observer) watch(thread string, t *Trace) {
	o.mu.Lock()
	o.traces[thread] = t
	o.mu.Unlock()
}

func (o *observer) StartRun(ctx context.Context, run agent.RunInfo) agent.RunObserver {
	o.mu.Lock()
	t := o.traces[run.Thread]
	o.mu.Unlock()
	r := &runObserver{t: t}
	if o.next != nil {
		r.next = o.next.StartRun(ctx, run)
	}
	return r
}

type runObserver struct {
	t    *Trace
	next agent.RunObserver
}

func (r *runObserver) Event(e agent.Event) {
	if r.t != nil {
		switch e.Type {
		case agent.EventFailure, agent.EventRoute:
			r.t.add(e)
		}
	}
	if r.next != nil {
		r.next.Event(e)
	}
}

func (r *runObserver) TraceContext() agent.TraceContext {
	if r.next != nil {
		return r.next.TraceContext()
	}
	return agent.TraceContext{}
}

func (r *runObserver) End() {
	if r.next != nil {
		r.next.End()
	}
}

// sideEffecting reports whether reg's capability name acts on the outside world.
func sideEffecting(reg *capabilities.Registry, name string) bool {
	c, ok := reg.Get(name)
	return ok && capabilities.HasSideEffects(c)
}
