package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/errornode"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/state"
)

// Agent runs turns on threads. It is safe for concurrent use on different
// threads; a second run on a busy thread fails with graph.ErrThreadBusy.
type Agent struct {
	cfg Config
	rc  router.Config
	g   *graph.Compiled[state.State, state.Update]
	// graphVersion identifies the registered capabilities (application.go).
	graphVersion string

	pruner checkpoint.Pruner // the store, when it prunes (prune.go)
	sweep  sweeper
	// life is what the agent runs, for Close (close.go).
	life *lifetime
	// targetStarts makes counting a turn's writes on a target and starting
	// one a single step (target.go), for parallel steps.
	targetStarts sync.Mutex
}

var _ Runner = (*Agent)(nil)

// New validates cfg and compiles the agent graph: the infrastructure nodes,
// one node per registered capability and the error node, every node but the
// error node routed by the router.
func New(cfg Config) (*Agent, error) {
	cfg.defaults()
	registration := cfg.registerCapabilities()
	if err := cfg.fillNodes(); err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	if rl, ok := cfg.Store.(checkpoint.RecordLog); ok && cfg.AuditLog == nil {
		cfg.AuditLog = rl
	}
	if err := cfg.validate(registration); err != nil {
		return nil, err
	}
	caps := cfg.Registry.All()
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = c.Name()
	}
	a := &Agent{cfg: cfg, rc: routerConfig(cfg.Limits, names), graphVersion: graphVersion(caps), life: newLifetime()}
	a.pruner, _ = cfg.Store.(checkpoint.Pruner)
	if cfg.ErrorNode == nil {
		en, err := errornode.New(errornode.Config{Models: cfg.Models, Overview: cfg.Registry.Overview(), Router: a.rc, Now: cfg.Now, Prompts: cfg.Nodes.Prompts,
			Timeout: cfg.ErrorExplanationTimeout, SideEffects: a.sideEffects})
		if err != nil {
			return nil, err
		}
		a.cfg.ErrorNode = en
	} else if cfg.ErrorNode.Name() != state.NodeError {
		return nil, &ConfigError{Field: "ErrorNode", Problem: fmt.Sprintf("node is named %q, want %q", cfg.ErrorNode.Name(), state.NodeError)}
	}

	g := graph.New(graph.Config[state.State, state.Update]{
		Apply: state.Apply,
		Store: cfg.Store,
		// The router's node-step limit ends a turn in the error node; the
		// engine's own cap is only a backstop above it.
		MaxSteps:       a.rc.MaxNodeSteps + 10,
		MaxConcurrency: cfg.MaxConcurrency,
		Durability:     cfg.Durability,
		Now:            cfg.Now,
		Clock:          cfg.Clock,
		Metadata:       func(s state.State) map[string]string { return s.Metadata },
	})
	infra := []nodes.Node{cfg.TaskExtraction, cfg.Classifier, cfg.Orchestrator, cfg.Respond, cfg.Clarify}
	targets := []string{state.NodeError}
	for _, n := range infra {
		fn := a.infraNode(n)
		if name := n.Name(); name == state.NodeRespond || name == state.NodeClarify {
			fn = a.rejectionNode(fn)
		}
		g.AddNode(n.Name(), a.withAnswer(fn))
		targets = append(targets, n.Name())
	}
	g.AddNode(state.NodePlanApproval, a.withAnswer(a.planApprovalNode()))
	targets = append(targets, state.NodePlanApproval)
	for _, c := range caps {
		g.AddNode(c.Name(), a.withAnswer(a.stepNode(c)))
		targets = append(targets, c.Name())
	}
	g.AddNode(state.NodeError, a.errorNode(a.cfg.ErrorNode))
	g.SetTerminal(state.NodeError)
	// One route for every node: the router's decision, carried to the
	// nodes it starts (router.Carried), so none of them decides again.
	route := router.Route(a.rc)
	for _, t := range targets[1:] {
		// Named so that a drawing (Compiled.Topology) shows the one router.
		g.AddNamedConditionalEdges(t, "router", route, targets...)
	}
	// A new turn has no task, so the router's first decision is always task
	// extraction; the entry is that node.
	g.SetEntry(state.NodeTaskExtraction)
	compiled, err := g.Compile()
	if err != nil {
		return nil, err
	}
	a.g = compiled
	return a, nil
}

// sideEffects reports whether the registered capability acts on the
// outside world, for the error report's list of changes made.
func (a *Agent) sideEffects(capability string) bool {
	c, ok := a.cfg.Registry.Get(capability)
	return ok && capabilities.HasSideEffects(c)
}

// RouterConfig returns the router configuration the agent routes with.
func (a *Agent) RouterConfig() router.Config { return a.rc }

// Graph returns the compiled graph (for inspection and tests).
func (a *Agent) Graph() *graph.Compiled[state.State, state.Update] { return a.g }

// errorNode wraps the error node: it counts the step and makes sure the turn
// ends with a message even if a custom error node fails.
func (a *Agent) errorNode(n nodes.Node) graph.NodeFunc[state.State, state.Update] {
	return func(ctx context.Context, s state.State) (state.Update, error) {
		if a.cfg.Observer != nil {
			d := router.Carried(ctx, s, a.rc)
			emit(ctx, Event{Type: EventErrorCause, Text: string(d.Cause), Detail: &Detail{Failure: FailureInfo{Limit: d.Limit, Severity: severityOf(d.Error)}}})
		}
		nctx, cancel := context.WithTimeout(ctx, a.cfg.ErrorNodeGrace)
		defer cancel()
		u, err := a.callInfra(nctx, n, s)
		if err == nil && len(u.Messages) > 0 {
			t := s.Turn
			if u.Turn != nil {
				t = *u.Turn
			}
			t.Done = true
			t.Control.NodeSteps, t.Control.Tokens, t.Control.TokensByRole = s.Turn.Control.NodeSteps, s.Turn.Control.Tokens, s.Turn.Control.TokensByRole
			u.Turn, u.NodeSteps, u.Step = &t, 1, nil
			return u, nil
		}
		if ctx.Err() != nil {
			return state.Update{}, ctx.Err()
		}
		if err == nil {
			err = errors.New("the error node wrote no message")
		}
		// The standard node never fails; a custom one did. Fall back to it.
		std, _ := errornode.New(errornode.Config{Router: a.rc, Now: a.cfg.Now, SideEffects: a.sideEffects})
		u, _ = std.Run(ctx, s)
		u.Messages[0].Content += "\n\n(The configured error node failed: " + err.Error() + ")"
		u.NodeSteps = 1
		return u, nil
	}
}

// Run starts a turn on req.Thread and streams its events.
//
// On a thread whose last run waits for an approval, the new message is the
// human's reply to it when it is a clear yes or no (ParseYes, ParseNo): the
// run resumes with that answer, as Resume would. Anything else supersedes
// the approval: the waiting run ends as rejected ("nothing was done"), an
// EventStatus says so, and the message starts a new turn. An expired
// approval is always superseded.
func (a *Agent) Run(ctx context.Context, req TurnRequest) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		p := &pump{a: a, thread: req.Thread, yield: yield}
		if strings.TrimSpace(req.Thread) == "" || strings.TrimSpace(req.Input) == "" {
			p.fail(fmt.Errorf("%w: thread and input must not be empty", ErrBadRequest))
			return
		}
		// The configuration is the ceiling: a looser request fails here,
		// before anything is read or written.
		opts, err := a.TurnOptions(req)
		if err != nil {
			p.fail(err)
			return
		}
		if err := a.validateAllowed(req.AllowedCapabilities); err != nil {
			p.fail(err)
			return
		}
		ctx, release, err := a.ownThread(ctx, req.Thread)
		if err != nil {
			p.fail(err)
			return
		}
		defer release()
		p.yield = leaseYield(ctx, p.yield)
		s, gctx, ok := a.startTurn(ctx, p, req, opts)
		if !ok {
			return
		}
		p.run(ctx, a.g.Stream(a.graphCtx(gctx, req.Thread), req.Thread, *s))
		a.afterTurn()
	}
}

// startTurn reads the thread and returns the state its turn starts from,
// or ends the run (ok false): an approval the input answers is resumed,
// one it does not is ended first. A function of its own, so that the run's
// goroutine does not keep its locals (states, the checkpoint, the
// approval: kilobytes) on its stack for the whole turn — a live
// conversation's stack stays small enough for the collector to shrink it.
//
//go:noinline
func (a *Agent) startTurn(ctx context.Context, p *pump, req TurnRequest, opts state.Options) (*state.State, context.Context, bool) {
	prev, t, err := a.g.State(ctx, req.Thread)
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		p.fail(fmt.Errorf("agent: read thread %q: %w", req.Thread, err))
		return nil, nil, false
	}
	// The lease (ownThread) holds the thread: what was read is still its
	// latest checkpoint when the run starts, unless this turn writes first.
	gctx := graph.WithLatest(ctx, req.Thread, t.Checkpoint, err == nil)
	if err == nil {
		// Another application's thread is refused; a run waiting for
		// approval is continued (or ended) below, which only the graph
		// that started it may do.
		if err := a.checkOwner(req.Thread, t.Checkpoint.Metadata, graph.StatusOf(t) == graph.StatusInterrupted); err != nil {
			p.fail(err)
			return nil, nil, false
		}
	}
	if err == nil && graph.StatusOf(t) == graph.StatusInterrupted {
		if aps := approvalsOf(graph.Interrupts(t)); len(aps) > 0 {
			ap := aps[0]
			expired := a.expired(ap)
			if !expired && (ParseYes(req.Input) || ParseNo(req.Input)) {
				a.resume(ctx, p, req.Thread, Answer{ApprovalID: ap.ID, Text: req.Input, By: req.By})
				return nil, nil, false
			}
			gctx = ctx // supersede writes the thread: the run reads it again
			if prev, err = a.supersede(ctx, req.Thread, ap, req.Input, req.By, expired); err != nil {
				p.fail(err)
				return nil, nil, false
			}
			why := "your new message replaced it"
			if expired {
				why = "it had expired"
			}
			if !p.send(Event{Type: EventStatus, Text: fmt.Sprintf("The pending approval (%s) was cancelled because %s: nothing was done.", ap.Summary, why)}, nil) {
				return nil, nil, false
			}
		}
	}
	s := state.NewTurn(prev, req.Input, opts, a.cfg.Now())
	s.Turn.ID = newID()
	s.Turn.Options = rehearsalOptions(prev.Metadata, req.Options, s.Turn.Options)
	s.Metadata = mergeMeta(prev.Metadata, req.Metadata)
	delete(s.Metadata, MetaForkInput) // the fork's edited message runs now
	s.Metadata = withAllowed(s.Metadata, req.AllowedCapabilities)
	s.Metadata = a.withOwner(s.Metadata)
	if a.cfg.Observer != nil {
		a.startObserving(ctx, p, req.Thread, false, TraceContext{}, nil)
		if tc := p.obs.TraceContext(); tc.TraceParent != "" {
			s.Turn.Trace = &tc
		}
	}
	return &s, gctx, true
}

// supersede ends the run waiting for approval ap, which input does not
// answer, so that its turn ends with a message saying nothing was done,
// and returns the thread's state afterwards. The decision says why: the
// approval had expired (rule state.AnswerExpired), or the new message
// replaced the question (rule state.AnswerSuperseded, with its words).
func (a *Agent) supersede(ctx context.Context, thread string, ap state.Approval, input, by string, expired bool) (state.State, error) {
	d := state.ApprovalDecision{ID: ap.ID, Kind: ap.Kind, Approved: false, At: a.cfg.Now(), Asked: ap.Created,
		Summary: ap.Summary, ActionDigest: ap.ActionDigest, Before: ap.Before, Rule: state.AnswerSuperseded, Answer: input, By: by}
	if expired {
		d.Rule, d.Answer, d.By = state.AnswerExpired, "", ""
	}
	return a.endApproval(ctx, thread, d)
}

// State returns the thread's latest state and how its last run ended. While
// the run waits for a human, Turn.PendingApproval holds the first pending
// approval (and Control.Blocked the failure, for an escalation): the engine
// keeps the question in the checkpoint's interrupt, not in the state.
func (a *Agent) State(ctx context.Context, thread string) (state.State, RunStatus, error) {
	s, t, err := a.g.State(ctx, thread)
	if err != nil {
		return s, "", a.threadErr(thread, err)
	}
	if err := a.checkOwner(thread, t.Checkpoint.Metadata, false); err != nil {
		return state.State{}, "", err
	}
	switch graph.StatusOf(t) {
	case graph.StatusInterrupted:
		if aps := approvalsOf(graph.Interrupts(t)); len(aps) > 0 {
			ap := aps[0]
			s.Turn.PendingApproval = &ap
			if ap.Kind == state.ApprovalEscalation {
				s.Turn.Control.Blocked = blockedOf(ap)
			}
		}
		return s, RunInterrupted, nil
	case graph.StatusFailed:
		return s, RunFailed, nil
	case graph.StatusCanceled:
		return s, RunCanceled, nil
	}
	return s, RunAnswered, nil
}

// PendingApprovals returns the approvals the thread's last run waits for
// (several when concurrent steps each asked), oldest first.
func (a *Agent) PendingApprovals(ctx context.Context, thread string) ([]state.Approval, error) {
	_, t, err := a.g.State(ctx, thread)
	if err != nil {
		return nil, a.threadErr(thread, err)
	}
	if err := a.checkOwner(thread, t.Checkpoint.Metadata, false); err != nil {
		return nil, err
	}
	if graph.StatusOf(t) != graph.StatusInterrupted {
		return nil, nil
	}
	return approvalsOf(graph.Interrupts(t)), nil
}

func blockedOf(ap state.Approval) *state.ErrorInfo {
	kind, _ := ap.Arguments["kind"].(string)
	node := ap.Capability
	if node == "" {
		node, _ = ap.Arguments["node"].(string)
	}
	return &state.ErrorInfo{Node: node, Capability: ap.Capability, StepIndex: ap.StepIndex, At: ap.Created, Message: ap.Summary,
		Classification: capabilities.Classification{Severity: capabilities.Critical, Kind: kind, UserMessage: ap.Summary}}
}

// DeleteThread removes a thread's checkpoints. Another application's
// thread is refused (*ForeignThreadError); a thread that does not exist is
// no error.
func (a *Agent) DeleteThread(ctx context.Context, thread string) error {
	end, err := a.life.begin()
	if err != nil {
		return err
	}
	defer end()
	t, err := a.cfg.Store.Get(ctx, thread, uuid.Nil)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("agent: read thread %q: %w", thread, err)
	}
	if err := a.checkOwner(thread, t.Checkpoint.Metadata, false); err != nil {
		return err
	}
	return a.cfg.Store.DeleteThread(ctx, thread)
}

func (a *Agent) threadErr(thread string, err error) error {
	if errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("%w: %q: %w", ErrUnknownThread, thread, err)
	}
	return err
}

func newID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}

func mergeMeta(prev, add map[string]string) map[string]string {
	if len(prev)+len(add) == 0 {
		return nil
	}
	out := make(map[string]string, len(prev)+len(add))
	for k, v := range prev {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}
