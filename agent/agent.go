package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/google/uuid"

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
}

var _ Runner = (*Agent)(nil)

// New validates cfg and compiles the agent graph: the infrastructure nodes,
// one node per registered capability and the error node, every node but the
// error node routed by the router.
func New(cfg Config) (*Agent, error) {
	cfg.defaults()
	if err := cfg.fillNodes(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	caps := cfg.Registry.All()
	names := make([]string, len(caps))
	for i, c := range caps {
		names[i] = c.Name()
	}
	a := &Agent{cfg: cfg, rc: cfg.Limits.router(names)}
	if cfg.ErrorNode == nil {
		en, err := errornode.New(errornode.Config{Models: cfg.Models, Overview: cfg.Registry.Overview(), Router: a.rc, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		a.cfg.ErrorNode = en
	} else if cfg.ErrorNode.Name() != nodes.Error {
		return nil, &ConfigError{Field: "ErrorNode", Problem: fmt.Sprintf("node is named %q, want %q", cfg.ErrorNode.Name(), nodes.Error)}
	}

	g := graph.New(graph.Config[state.State, state.Update]{
		Apply: state.Apply,
		Store: cfg.Store,
		// The router's node-step limit ends a turn in the error node; the
		// engine's own cap is only a backstop above it.
		MaxSteps:       a.rc.MaxNodeSteps + 10,
		MaxConcurrency: cfg.MaxConcurrency,
		Now:            cfg.Now,
		Metadata:       func(s state.State) map[string]string { return s.Metadata },
	})
	infra := []nodes.Node{cfg.TaskExtraction, cfg.Classifier, cfg.Orchestrator, cfg.Respond, cfg.Clarify}
	targets := []string{nodes.Error}
	for _, n := range infra {
		g.AddNode(n.Name(), a.infraNode(n))
		targets = append(targets, n.Name())
	}
	for _, c := range caps {
		g.AddNode(c.Name(), a.stepNode(c))
		targets = append(targets, c.Name())
	}
	g.AddNode(nodes.Error, a.errorNode(a.cfg.ErrorNode))
	g.SetTerminal(nodes.Error)
	route := func(s state.State) graph.Route {
		d := router.Decide(s, a.rc)
		return graph.Route{To: d.Next, NotBefore: d.NotBefore}
	}
	for _, t := range targets[1:] {
		g.AddConditionalEdges(t, route, targets...)
	}
	// A new turn has no task, so the router's first decision is always task
	// extraction; the entry is that node.
	g.SetEntry(nodes.TaskExtraction)
	compiled, err := g.Compile()
	if err != nil {
		return nil, err
	}
	a.g = compiled
	return a, nil
}

// RouterConfig returns the router configuration the agent routes with.
func (a *Agent) RouterConfig() router.Config { return a.rc }

// Graph returns the compiled graph (for inspection and tests).
func (a *Agent) Graph() *graph.Compiled[state.State, state.Update] { return a.g }

// errorNode wraps the error node: it counts the step and makes sure the turn
// ends with a message even if a custom error node fails.
func (a *Agent) errorNode(n nodes.Node) graph.NodeFunc[state.State, state.Update] {
	return func(ctx context.Context, s state.State) (state.Update, error) {
		nctx, cancel := context.WithTimeout(ctx, a.cfg.ErrorNodeGrace)
		defer cancel()
		u, err := callInfra(nctx, n, s)
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
		std, _ := errornode.New(errornode.Config{Router: a.rc, Now: a.cfg.Now})
		u, _ = std.Run(ctx, s)
		u.Messages[0].Content += "\n\n(The configured error node failed: " + err.Error() + ")"
		u.NodeSteps = 1
		return u, nil
	}
}

// Run starts a turn on req.Thread and streams its events.
func (a *Agent) Run(ctx context.Context, req TurnRequest) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		p := &pump{a: a, thread: req.Thread, yield: yield}
		if strings.TrimSpace(req.Thread) == "" || strings.TrimSpace(req.Input) == "" {
			p.fail(fmt.Errorf("%w: thread and input must not be empty", ErrBadRequest))
			return
		}
		prev, _, err := a.g.State(ctx, req.Thread)
		if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
			p.fail(fmt.Errorf("agent: read thread %q: %w", req.Thread, err))
			return
		}
		opts := a.cfg.Options
		if req.Options != nil {
			opts = *req.Options
		}
		s := state.NewTurn(prev, req.Input, opts, a.cfg.Now())
		s.Turn.ID = newID()
		s.Metadata = mergeMeta(prev.Metadata, req.Metadata)
		p.run(ctx, a.g.Stream(withThread(ctx, req.Thread), req.Thread, s))
	}
}

// Resume continues a thread: with a zero Answer after a crash or a
// cancellation; otherwise with the answer to its pending interrupt, which
// the interrupted node receives as a state.ApprovalDecision through
// graph.ResumeValue.
func (a *Agent) Resume(ctx context.Context, thread string, ans Answer) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		p := &pump{a: a, thread: thread, yield: yield}
		if strings.TrimSpace(thread) == "" {
			p.fail(fmt.Errorf("%w: thread must not be empty", ErrBadRequest))
			return
		}
		var value any
		if !ans.zero() {
			_, t, err := a.g.State(ctx, thread)
			if err != nil {
				p.fail(a.threadErr(thread, err))
				return
			}
			pending := graph.Interrupts(t)
			if len(pending) == 0 {
				p.fail(fmt.Errorf("%w: thread %q has no pending approval", ErrBadRequest, thread))
				return
			}
			if ans.ApprovalID != "" && !pendingHas(pending, ans.ApprovalID) {
				p.fail(fmt.Errorf("%w: approval %q is not pending on thread %q", ErrBadRequest, ans.ApprovalID, thread))
				return
			}
			if ans.ApprovalID == "" {
				ans.ApprovalID = pendingID(pending[0])
			}
			value = ans.decision(a.cfg.Now())
		}
		p.run(ctx, a.g.ResumeStream(withThread(ctx, thread), thread, value))
	}
}

// State returns the thread's latest state and how its last run ended.
func (a *Agent) State(ctx context.Context, thread string) (state.State, RunStatus, error) {
	s, t, err := a.g.State(ctx, thread)
	if err != nil {
		return s, "", a.threadErr(thread, err)
	}
	switch graph.StatusOf(t) {
	case graph.StatusInterrupted:
		return s, RunInterrupted, nil
	case graph.StatusFailed:
		return s, RunFailed, nil
	case graph.StatusCanceled:
		return s, RunCanceled, nil
	}
	return s, RunAnswered, nil
}

// DeleteThread removes a thread's checkpoints.
func (a *Agent) DeleteThread(ctx context.Context, thread string) error {
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
