package server

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/state"
)

// scriptedRunner is an agent.Runner that plays realistic event sequences
// chosen by the input's keywords:
//
//	"fail"  — a few events, then a fatal error
//	"write" — reads, then asks approval for a setpoint write (interrupted);
//	          Resume with a yes executes the write (counted in Writes)
//	"slow"  — waits for Release (or ctx) before answering
//	else    — a two-step plan with a retry, streamed answer tokens
type scriptedRunner struct {
	mu      sync.Mutex
	threads map[string]*scriptedThread
	deleted map[string]bool
	Writes  int                 // executions of the write step
	Runs    []agent.TurnRequest // every Run request
	Resumes []agent.Answer      // every Resume answer
	release chan struct{}
	records *memory.Store // run records, as an agent's store keeps them
}

// RunStore makes the scripted runner keep run records like *agent.Agent.
func (s *scriptedRunner) RunStore() runstore.Store { return s.records }

type scriptedThread struct {
	st     state.State
	status agent.RunStatus
}

var errScriptedFatal = errors.New("scripted fatal failure: the checkpoint store is unreachable")

func newScriptedRunner() *scriptedRunner {
	return &scriptedRunner{threads: map[string]*scriptedThread{}, release: make(chan struct{}), records: memory.New()}
}

// Release lets every waiting "slow" run finish.
func (s *scriptedRunner) Release() { close(s.release) }

func (s *scriptedRunner) thread(id string) *scriptedThread {
	s.mu.Lock()
	defer s.mu.Unlock()
	th, ok := s.threads[id]
	if !ok {
		th = &scriptedThread{}
		s.threads[id] = th
	}
	return th
}

func (s *scriptedRunner) Run(ctx context.Context, req agent.TurnRequest) iter.Seq2[agent.Event, error] {
	s.mu.Lock()
	s.Runs = append(s.Runs, req)
	s.mu.Unlock()
	th := s.thread(req.Thread)
	return func(yield func(agent.Event, error) bool) {
		s.mu.Lock()
		th.st = state.NewTurn(th.st, req.Input, state.Options{}, time.Now())
		s.mu.Unlock()
		ev := func(e agent.Event) bool {
			e.Thread = req.Thread
			s.stepEnded(th, e)
			return yield(e, nil)
		}
		if !ev(agent.Event{Type: agent.EventRunStart}) || !ev(agent.Event{Type: agent.EventStatus, Text: "Extracting the task"}) ||
			!ev(agent.Event{Type: agent.EventTask, Text: req.Input}) {
			return
		}
		in := strings.ToLower(req.Input)
		switch {
		case strings.Contains(in, "fail"):
			ev(agent.Event{Type: agent.EventNodeStart, Node: "classifier"})
			yield(agent.Event{}, errScriptedFatal)
			s.setStatus(th, agent.RunFailed)
		case strings.Contains(in, "write"):
			s.runWrite(ctx, th, ev)
		case strings.Contains(in, "slow"):
			ev(agent.Event{Type: agent.EventStatus, Text: "Waiting for the archiver"})
			select {
			case <-s.release:
			case <-ctx.Done():
				ev(agent.Event{Type: agent.EventDone, Status: agent.RunCanceled})
				s.setStatus(th, agent.RunCanceled)
				return
			}
			s.answer(th, ev, "Done after waiting.")
		default:
			s.runRead(th, ev)
		}
	}
}

func plan(steps ...state.PlanStep) *state.Plan {
	return &state.Plan{Number: 1, Steps: steps, Created: time.Now()}
}

func step(capability, objective string, params map[string]any) state.PlanStep {
	return state.PlanStep{PlannedStep: capabilities.PlannedStep{Capability: capability, TaskObjective: objective, ContextKey: capability, Parameters: params}, Status: state.StepPending}
}

func (s *scriptedRunner) runRead(th *scriptedThread, ev func(agent.Event) bool) {
	p := plan(step("channel_read", "read SR:DCCT", map[string]any{"channel": "SR:DCCT"}), step("respond", "answer", nil))
	s.mu.Lock()
	th.st.Turn.Plan = p
	s.mu.Unlock()
	seq := []agent.Event{
		{Type: agent.EventNodeStart, Node: "classifier"},
		{Type: agent.EventCapabilities, Capabilities: []string{"channel_read"}},
		{Type: agent.EventNodeEnd, Node: "classifier", Duration: time.Millisecond},
		{Type: agent.EventNodeStart, Node: "orchestrator"},
		{Type: agent.EventPlan, Plan: p},
		{Type: agent.EventNodeEnd, Node: "orchestrator", Duration: time.Millisecond},
		{Type: agent.EventNodeStart, Node: "channel_read"},
		{Type: agent.EventStepStart, Step: 0, Total: 2, Capability: "channel_read"},
		{Type: agent.EventStepEnd, Step: 0, Total: 2, Capability: "channel_read", Err: "connection refused"},
		{Type: agent.EventRetry, Retry: &agent.RetryInfo{Node: "channel_read", Attempt: 1, Max: 3, Delay: 200 * time.Millisecond, Reason: "connection refused"}},
		{Type: agent.EventStepStart, Step: 0, Total: 2, Capability: "channel_read"},
		{Type: agent.EventStepEnd, Step: 0, Total: 2, Capability: "channel_read", Duration: 400 * time.Millisecond},
		{Type: agent.EventNodeEnd, Node: "channel_read", Duration: 400 * time.Millisecond},
		{Type: agent.EventNodeStart, Node: "respond"},
		{Type: agent.EventStepStart, Step: 1, Total: 2, Capability: "respond"},
		{Type: agent.EventToken, Text: "Beam current "},
		{Type: agent.EventToken, Text: "is 500 mA."},
		{Type: agent.EventStepEnd, Step: 1, Total: 2, Capability: "respond"},
		{Type: agent.EventNodeEnd, Node: "respond"},
	}
	for _, e := range seq {
		if !ev(e) {
			return
		}
	}
	s.answer(th, ev, "Beam current is 500 mA.")
}

func (s *scriptedRunner) answer(th *scriptedThread, ev func(agent.Event) bool, text string) {
	msg := state.Message{Role: state.RoleAssistant, Content: text, Kind: state.KindAnswer}
	s.mu.Lock()
	th.st.Messages = append(th.st.Messages, msg)
	th.st.Turn.Done = true
	th.status = agent.RunAnswered
	s.mu.Unlock()
	_ = ev(agent.Event{Type: agent.EventMessage, Message: &msg}) &&
		ev(agent.Event{Type: agent.EventModelCall, Node: "respond", Call: &agent.ModelCall{Role: "response", Model: "scripted", Usage: agent.Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14}}}) &&
		ev(agent.Event{Type: agent.EventUsage, Usage: &agent.Usage{TotalTokens: 14}}) &&
		ev(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered})
}

// stepEnded records a step's end in the thread's plan, as the agent's
// checkpoint does (a copy: the plan event shares the old one).
func (s *scriptedRunner) stepEnded(th *scriptedThread, e agent.Event) {
	if e.Type != agent.EventStepEnd {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := th.st.Turn.Plan
	if old == nil || e.Step < 0 || e.Step >= len(old.Steps) {
		return
	}
	p := *old
	p.Steps = slices.Clone(old.Steps)
	p.Steps[e.Step].Status = state.StepDone
	if e.Err != "" {
		p.Steps[e.Step].Status = state.StepFailed
	}
	th.st.Turn.Plan = &p
}

func (s *scriptedRunner) setStatus(th *scriptedThread, st agent.RunStatus) {
	s.mu.Lock()
	th.status = st
	s.mu.Unlock()
}

func (s *scriptedRunner) runWrite(_ context.Context, th *scriptedThread, ev func(agent.Event) bool) {
	p := plan(step("channel_read", "read the corrector", map[string]any{"channel": "SR:HCM1"}),
		step("channel_write", "set the corrector to 1.5 A", map[string]any{"channel": "SR:HCM1", "value": 1.5}))
	ap := &state.Approval{ID: "approval-1", Kind: state.ApprovalStep, Capability: "channel_write", StepIndex: 1,
		Summary: "Write 1.5 A to SR:HCM1 (now 1.2 A).", Arguments: map[string]any{"channel": "SR:HCM1", "value": 1.5}, Created: time.Now()}
	msg := state.Message{Role: state.RoleAssistant, Content: "Approval needed: write 1.5 A to SR:HCM1 (now 1.2 A).", Kind: state.KindApprovalRequest}
	s.mu.Lock()
	th.st.Turn.Plan = p
	th.st.Turn.PendingApproval = ap
	th.st.Messages = append(th.st.Messages, msg)
	th.status = agent.RunInterrupted
	s.mu.Unlock()
	for _, e := range []agent.Event{
		{Type: agent.EventCapabilities, Capabilities: []string{"channel_read", "channel_write"}},
		{Type: agent.EventPlan, Plan: p},
		{Type: agent.EventStepStart, Step: 0, Total: 2, Capability: "channel_read"},
		{Type: agent.EventStepEnd, Step: 0, Total: 2, Capability: "channel_read", Duration: time.Millisecond},
		{Type: agent.EventApprovalRequired, Approval: ap, Text: ap.Summary},
		{Type: agent.EventDone, Status: agent.RunInterrupted},
	} {
		if !ev(e) {
			return
		}
	}
}

// approved parses an answer the way the agent does: explicit flag first,
// then a clear yes; anything else is a no.
func approved(a agent.Answer) bool {
	if a.Approved != nil {
		return *a.Approved
	}
	f := strings.Fields(strings.ToLower(a.Text))
	return len(f) > 0 && (f[0] == "yes" || f[0] == "y")
}

func (s *scriptedRunner) Resume(ctx context.Context, thread string, ans agent.Answer) iter.Seq2[agent.Event, error] {
	s.mu.Lock()
	s.Resumes = append(s.Resumes, ans)
	s.mu.Unlock()
	th := s.thread(thread)
	return func(yield func(agent.Event, error) bool) {
		ev := func(e agent.Event) bool {
			e.Thread = thread
			s.stepEnded(th, e)
			return yield(e, nil)
		}
		s.mu.Lock()
		pending := th.st.Turn.PendingApproval
		if pending == nil || pending.ID != ans.ApprovalID {
			s.mu.Unlock()
			yield(agent.Event{}, errors.New("no such pending approval"))
			return
		}
		th.st.Turn.PendingApproval = nil
		s.mu.Unlock()
		if !ev(agent.Event{Type: agent.EventRunStart}) {
			return
		}
		if !approved(ans) {
			msg := state.Message{Role: state.RoleAssistant, Content: "Cancelled: nothing was written.", Kind: state.KindRejected}
			s.mu.Lock()
			th.st.Messages = append(th.st.Messages, msg)
			th.status = agent.RunAnswered
			s.mu.Unlock()
			_ = ev(agent.Event{Type: agent.EventMessage, Message: &msg}) && ev(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered})
			return
		}
		if !ev(agent.Event{Type: agent.EventStepStart, Step: 1, Total: 2, Capability: "channel_write"}) {
			return
		}
		s.mu.Lock()
		s.Writes++
		s.mu.Unlock()
		if !ev(agent.Event{Type: agent.EventStepEnd, Step: 1, Total: 2, Capability: "channel_write", Duration: 2 * time.Millisecond}) {
			return
		}
		s.answer(th, ev, "SR:HCM1 is now 1.5 A.")
	}
}

func (s *scriptedRunner) State(_ context.Context, thread string) (state.State, agent.RunStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	th, ok := s.threads[thread]
	switch {
	case !ok && s.deleted[thread]:
		return state.State{}, "", errors.New("no such thread")
	case !ok:
		// Created (the server made it) and not yet run: an empty thread,
		// as the agent's store has it. A 202 run may not have started yet.
		return state.State{}, "", nil
	}
	return th.st, th.status, nil
}

func (s *scriptedRunner) DeleteThread(_ context.Context, thread string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, thread)
	if s.deleted == nil {
		s.deleted = map[string]bool{}
	}
	s.deleted[thread] = true
	return nil
}

func (s *scriptedRunner) writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Writes
}

func (s *scriptedRunner) runs() []agent.TurnRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.TurnRequest(nil), s.Runs...)
}

func (s *scriptedRunner) resumes() []agent.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]agent.Answer(nil), s.Resumes...)
}
