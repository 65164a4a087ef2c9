package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// AG-UI (frontends.md §5.1): the client POSTs a RunAgentInput and reads
// one JSON event per SSE data frame. Our mapping:
//
//	node_start/node_end       → STEP_STARTED / STEP_FINISHED (stepName = node)
//	plan                      → STATE_SNAPSHOT {plan:[…]}
//	step_start                → TOOL_CALL_START/ARGS/END (+ STATE_DELTA running)
//	step_end                  → TOOL_CALL_RESULT (+ STATE_DELTA done/failed)
//	end of the run            → STATE_DELTA for every step whose status the
//	                            checkpointed plan has otherwise (respond)
//	token / message           → TEXT_MESSAGE_START/CONTENT/END
//	approval_required         → RUN_FINISHED outcome interrupt (id = approval id)
//	audit (an outcome)        → CUSTOM "outcome"
//	fatal error               → RUN_ERROR
//
// A run with resume[] answers the pending approval.

type aguiInput struct {
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Messages []aguiMessage   `json:"messages"`
	Resume   []aguiResume    `json:"resume"`
	State    json.RawMessage `json:"state"`
	// ForwardedProps may carry {"options": {...}}: the turn's options,
	// which may only tighten the agent's configuration (403 otherwise).
	ForwardedProps *aguiProps `json:"forwardedProps"`
}

type aguiProps struct {
	Options *agent.TurnOptions `json:"options"`
}

type aguiMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type aguiResume struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved | cancelled
	Payload     json.RawMessage `json:"payload"`
}

// aguiEvent is any AG-UI event; fields are omitted when empty so the
// client's strict schema never sees a null.
type aguiEvent struct {
	Type        string         `json:"type"`
	Timestamp   int64          `json:"timestamp,omitempty"`
	ThreadID    string         `json:"threadId,omitempty"`
	RunID       string         `json:"runId,omitempty"`
	StepName    string         `json:"stepName,omitempty"`
	MessageID   string         `json:"messageId,omitempty"`
	Role        string         `json:"role,omitempty"`
	Delta       any            `json:"delta,omitempty"`
	ToolCallID  string         `json:"toolCallId,omitempty"`
	ToolName    string         `json:"toolCallName,omitempty"`
	Content     string         `json:"content,omitempty"`
	Snapshot    any            `json:"snapshot,omitempty"`
	Outcome     *aguiOutcome   `json:"outcome,omitempty"`
	Message     string         `json:"message,omitempty"`
	Code        string         `json:"code,omitempty"`
	Name        string         `json:"name,omitempty"`
	Value       any            `json:"value,omitempty"`
	ParentMsgID string         `json:"parentMessageId,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

type aguiOutcome struct {
	Type       string          `json:"type"`
	Interrupts []aguiInterrupt `json:"interrupts,omitempty"`
}

type aguiInterrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	ExpiresAt      string         `json:"expiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// aguiSpec is the run an AG-UI request asks for: a turn with its last
// user message, or, with resume, the answer to the thread's approval. It
// opens the thread (th) after everything is checked, so a refused request
// leaves nothing behind; a resume that answers nothing starts no run and
// is told in the stream (resumeErr).
func (s *Server) aguiSpec(ctx context.Context, c caller, in aguiInput, th *Thread, resumeErr *error) (*runSpec, error) {
	sp := &runSpec{c: c, source: "agui", clientThread: in.ThreadID, thread: internalThreadID(c, in.ThreadID)}
	if len(in.Resume) == 0 {
		var opts *agent.TurnOptions
		if in.ForwardedProps != nil {
			opts = in.ForwardedProps.Options
		}
		input, err := lastUserText(in.Messages)
		if err != nil {
			return nil, err
		}
		req, err := s.openTurn(c, turnOpening{field: "messages", input: input, options: opts, source: "agui", clientThread: in.ThreadID, thread: sp.thread})
		if err != nil {
			return nil, err
		}
		sp.kind, sp.turn = kindTurn, &req
	}
	var err error
	if *th, _, err = s.openThread(ctx, c, in.ThreadID, "agui", nil); err != nil {
		return nil, err
	}
	if len(in.Resume) > 0 {
		ans, err := s.aguiAnswer(ctx, *th, in.Resume)
		if err != nil {
			*resumeErr = err
			return nil, nil
		}
		sp.kind, sp.answer = kindAnswer, &ans
	}
	return sp, nil
}

// aguiPlanStep is one entry of the plan in the AG-UI state.
type aguiPlanStep struct {
	Step       int    `json:"step"`
	Capability string `json:"capability"`
	Objective  string `json:"objective,omitempty"`
	Status     string `json:"status"`
}

func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	var in aguiInput
	if err := reqbody.Decode(r, &in); err != nil {
		s.writeError(w, err)
		return
	}
	if err := checkThreadID("threadId", in.ThreadID); err != nil {
		s.writeError(w, err)
		return
	}
	if in.RunID != "" && !validThreadID(in.RunID) {
		s.writeError(w, badRequest("runId", "%s is not a valid run id: a run id is %s", quoteForClient(in.RunID), threadIDRule))
		return
	}
	if len(in.Messages) > s.cfg.MaxMessages {
		s.writeError(w, badRequest("messages", "%d messages exceed the limit of %d", len(in.Messages), s.cfg.MaxMessages))
		return
	}
	if in.RunID == "" {
		in.RunID = uuid.NewString()
	}
	var (
		th        Thread
		resumeErr error // a resume that answers nothing: said in the stream
	)
	op, ok := s.open(opening{w: w, r: r, c: c, scope: "agui:" + internalThreadID(c, in.ThreadID),
		spec: func(ctx context.Context, _ string) (*runSpec, error) {
			return s.aguiSpec(ctx, c, in, &th, &resumeErr)
		}})
	if !ok {
		return
	}
	ru := op.ru
	if op.dup != nil {
		w.Header().Set(headerReplayed, "true")
		var joined bool
		if ru, joined = s.runs.byID(op.dup.ID); !joined {
			s.writeError(w, &apierror.RequestError{Kind: apierror.ErrConflict, Message: fmt.Sprintf("this Idempotency-Key started run %s, which ended as %s or runs elsewhere; read the thread's state", op.dup.ID, op.dup.Status)})
			return
		}
	}
	sse := sse.Start(w, s.cfg.Now, s.cfg.StreamWriteTimeout)
	m := &aguiMapper{s: s, sse: sse, threadID: in.ThreadID, runID: in.RunID, steps: map[string]bool{}, thread: th.internal}
	m.emit(aguiEvent{Type: "RUN_STARTED", ThreadID: in.ThreadID, RunID: in.RunID})
	if resumeErr != nil {
		m.emit(aguiEvent{Type: "RUN_ERROR", Message: s.publicMessage(resumeErr), Code: "invalid_resume"})
		return
	}
	ru.join()
	ok = s.follow(r.Context(), ru, 0, sse, m.event, func() {
		if sse.Idle(s.cfg.Heartbeat) {
			m.emit(aguiEvent{Type: "CUSTOM", Name: "heartbeat", Value: map[string]any{}})
		}
	})
	if !ok {
		ru.leave(repeatable(r))
		return
	}
	status, runErr, shutdown := ru.result()
	m.closeOpen()
	m.syncPlan()
	switch {
	case runErr != nil:
		m.emit(aguiEvent{Type: "RUN_ERROR", Message: s.publicMessage(runErr), Code: "run_failed"})
	case status == agent.RunInterrupted && m.approval != nil:
		// AG-UI asks for the state before an interrupting RUN_FINISHED.
		m.emit(aguiEvent{Type: "STATE_SNAPSHOT", Snapshot: m.snapshot()})
		m.emit(aguiEvent{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID,
			Outcome: &aguiOutcome{Type: "interrupt", Interrupts: []aguiInterrupt{m.interrupt()}}})
	case shutdown || status == agent.RunCanceled:
		m.emit(aguiEvent{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID, Outcome: &aguiOutcome{Type: "cancelled"}})
	default:
		m.emit(aguiEvent{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID})
	}
}

// aguiAnswer checks a resume against the thread's pending approval and
// turns it into an agent.Answer. Mismatches are refused (RUN_ERROR).
func (s *Server) aguiAnswer(ctx context.Context, th Thread, resume []aguiResume) (agent.Answer, error) {
	if len(resume) != 1 {
		return agent.Answer{}, badRequest("resume", "must answer exactly the one pending interrupt, got %d entries", len(resume))
	}
	e := resume[0]
	if err := s.checkPending(ctx, th, e.InterruptID); err != nil {
		return agent.Answer{}, err
	}
	approved := false
	switch e.Status {
	case "cancelled":
	case "resolved":
		var p struct {
			Approved *bool `json:"approved"`
		}
		if len(e.Payload) > 0 {
			if err := json.Unmarshal(e.Payload, &p); err != nil {
				return agent.Answer{}, badRequest("resume[0].payload", "must be a JSON object {\"approved\": true|false}")
			}
		}
		if p.Approved == nil {
			return agent.Answer{}, badRequest("resume[0].payload", "must say {\"approved\": true|false}")
		}
		approved = *p.Approved
	default:
		return agent.Answer{}, badRequest("resume[0].status", "%s: want resolved or cancelled", quoteForClient(e.Status))
	}
	text := "no"
	if approved {
		text = "yes"
	}
	return agent.Answer{ApprovalID: e.InterruptID, Approved: &approved, Text: text, By: callerName(callerFrom(ctx))}, nil
}

func lastUserText(msgs []aguiMessage) (string, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		txt, err := chatMessage{Role: "user", Content: msgs[i].Content}.text()
		if err != nil {
			return "", badRequest(fmt.Sprintf("messages[%d].content", i), "must be a string or an array of content parts")
		}
		if strings.TrimSpace(txt) == "" {
			break
		}
		return txt, nil
	}
	return "", badRequest("messages", "no user message to answer")
}

// aguiMapper turns one run's agent events into AG-UI events, keeping the
// bookkeeping the client's verifier checks: steps and messages are closed
// before RUN_FINISHED, every tool call gets a result.
type aguiMapper struct {
	s        *Server
	sse      *sse.Writer
	threadID string
	runID    string

	steps    map[string]bool // open STEP_STARTED names
	stepList []string
	msgID    string          // open text message
	streamed strings.Builder // answer text streamed since the last reset
	plan     []aguiPlanStep
	calls    map[int]string // plan step → open tool call id
	approval *state.Approval
	attempt  map[int]int
	rawPlan  *state.Plan
	thread   string // internal id, to load the plan of a resumed run
	loaded   bool
}

func (m *aguiMapper) emit(e aguiEvent) {
	e.Timestamp = m.s.cfg.Now().UnixMilli()
	m.sse.Data(e)
}

func (m *aguiMapper) event(ev agent.Event) {
	switch ev.Type {
	case agent.EventNodeStart:
		if ev.Node != "" && !m.steps[ev.Node] {
			m.steps[ev.Node] = true
			m.stepList = append(m.stepList, ev.Node)
			m.emit(aguiEvent{Type: "STEP_STARTED", StepName: ev.Node})
		}
	case agent.EventNodeEnd:
		m.finishStep(ev.Node)
	case agent.EventStatus:
		m.emit(aguiEvent{Type: "CUSTOM", Name: "status", Value: map[string]any{"text": ev.Text}})
	case agent.EventPlan:
		if ev.Plan == nil {
			return
		}
		m.rawPlan, m.loaded = ev.Plan, true
		m.plan = m.plan[:0]
		for i, st := range ev.Plan.Steps {
			m.plan = append(m.plan, aguiPlanStep{Step: i, Capability: st.Capability, Objective: st.TaskObjective, Status: string(st.Status)})
		}
		m.emit(aguiEvent{Type: "STATE_SNAPSHOT", Snapshot: m.snapshot()})
	case agent.EventStepStart:
		m.ensurePlan()
		m.closeText()
		if m.calls == nil {
			m.calls, m.attempt = map[int]string{}, map[int]int{}
		}
		m.attempt[ev.Step]++
		id := fmt.Sprintf("%s-step%d-a%d", m.runID, ev.Step, m.attempt[ev.Step])
		m.calls[ev.Step] = id
		m.emit(aguiEvent{Type: "TOOL_CALL_START", ToolCallID: id, ToolName: ev.Capability})
		m.emit(aguiEvent{Type: "TOOL_CALL_ARGS", ToolCallID: id, Delta: m.args(ev.Step)})
		m.emit(aguiEvent{Type: "TOOL_CALL_END", ToolCallID: id})
		m.setStatus(ev.Step, "running")
	case agent.EventStepEnd:
		m.ensurePlan()
		m.closeText()
		id, ok := m.calls[ev.Step]
		if !ok {
			// A resumed run ends a step started before the interrupt:
			// its result still needs a call to belong to.
			if m.calls == nil {
				m.calls, m.attempt = map[int]string{}, map[int]int{}
			}
			id = fmt.Sprintf("%s-step%d", m.runID, ev.Step)
			m.emit(aguiEvent{Type: "TOOL_CALL_START", ToolCallID: id, ToolName: ev.Capability})
			m.emit(aguiEvent{Type: "TOOL_CALL_END", ToolCallID: id})
		}
		delete(m.calls, ev.Step)
		content, st := "ok"+durationNote(ev.Duration), "done"
		if ev.Err != "" {
			content, st = "failed: "+ev.Err, "failed"
		}
		m.emit(aguiEvent{Type: "TOOL_CALL_RESULT", MessageID: id + "-result", ToolCallID: id, Content: content, Role: "tool"})
		m.setStatus(ev.Step, st)
	case agent.EventArtifact:
		if ev.Artifact != nil {
			// The artifact as it is (docs/frontends.md, "Artifacts").
			m.emit(aguiEvent{Type: "CUSTOM", Name: "artifact", Value: ev.Artifact})
		}
	case agent.EventRetry:
		if ev.Retry != nil {
			m.emit(aguiEvent{Type: "CUSTOM", Name: "retry", Value: ev.Retry})
		}
	case agent.EventAudit:
		// How a side-effecting attempt ended (outcomes.go): the outcome,
		// the changes, the values before and the readback.
		if ev.Audit != nil {
			m.emit(aguiEvent{Type: "CUSTOM", Name: "outcome", Value: ev.Audit})
		}
	case agent.EventDenied:
		m.emit(aguiEvent{Type: "CUSTOM", Name: "denied", Value: map[string]any{"capability": ev.Capability, "step": ev.Step, "text": ev.Text}})
	case agent.EventToken:
		if ev.Text != "" {
			m.text(ev.Text)
			m.streamed.WriteString(ev.Text)
		}
	case agent.EventAnswerReset:
		// The streamed text of a failed attempt is void: end its message and
		// tell the client which one to drop; the retry opens a new message.
		if id := m.msgID; id != "" {
			m.closeText()
			m.emit(aguiEvent{Type: "CUSTOM", Name: "answer_reset", Value: map[string]any{"messageId": id, "reason": ev.Text}})
		}
		m.streamed.Reset()
	case agent.EventMessage:
		if ev.Message != nil {
			if rest := unstreamed(ev.Message.Content, m.streamed.String()); rest != "" {
				if m.streamed.Len() > 0 && m.msgID == "" {
					rest = strings.TrimLeft(rest, "\n")
				}
				m.text(rest)
			}
		}
		id := m.msgID
		m.closeText()
		m.streamed.Reset()
		if ev.Message != nil && ev.Message.Report != nil {
			// The structured report beside its Markdown message, so a
			// client reads fields instead of matching text.
			m.emit(aguiEvent{Type: "CUSTOM", Name: "error_report", Value: map[string]any{"messageId": id, "report": ev.Message.Report}})
		}
	case agent.EventApprovalRequired:
		m.approval = ev.Approval
		if ev.Approval != nil {
			m.emit(aguiEvent{Type: "CUSTOM", Name: "approval_required", Value: ev.Approval})
		}
	}
}

// snapshot is the AG-UI state: the plan with step statuses, and the
// pending approval while the run waits for one.
func (m *aguiMapper) snapshot() map[string]any {
	snap := map[string]any{"plan": m.plan}
	if m.rawPlan != nil {
		snap["planNumber"] = m.rawPlan.Number
	}
	if a := m.approval; a != nil {
		snap["pendingApproval"] = map[string]any{"id": a.ID, "kind": a.Kind, "capability": a.Capability, "step": a.StepIndex, "summary": a.Summary}
	}
	return snap
}

func (m *aguiMapper) finishStep(name string) {
	if !m.steps[name] {
		return
	}
	delete(m.steps, name)
	m.emit(aguiEvent{Type: "STEP_FINISHED", StepName: name})
}

func (m *aguiMapper) text(s string) {
	if m.msgID == "" {
		m.msgID = "msg-" + uuid.NewString()
		m.emit(aguiEvent{Type: "TEXT_MESSAGE_START", MessageID: m.msgID, Role: "assistant"})
	}
	m.emit(aguiEvent{Type: "TEXT_MESSAGE_CONTENT", MessageID: m.msgID, Delta: s})
}

func (m *aguiMapper) closeText() {
	if m.msgID != "" {
		m.emit(aguiEvent{Type: "TEXT_MESSAGE_END", MessageID: m.msgID})
		m.msgID = ""
	}
}

// closeOpen ends whatever is still open before the run's last event.
func (m *aguiMapper) closeOpen() {
	m.closeText()
	for _, name := range m.stepList {
		m.finishStep(name)
	}
	for step, id := range m.calls {
		content := "not finished"
		if m.approval != nil {
			content = "waiting for approval"
		}
		m.emit(aguiEvent{Type: "TOOL_CALL_RESULT", MessageID: id + "-result", ToolCallID: id, Content: content, Role: "tool"})
		delete(m.calls, step)
	}
}

func (m *aguiMapper) setStatus(step int, status string) {
	if step < 0 || step >= len(m.plan) {
		return
	}
	m.plan[step].Status = status
	m.emit(aguiEvent{Type: "STATE_DELTA", Delta: []map[string]any{{"op": "replace", "path": fmt.Sprintf("/plan/%d/status", step), "value": status}}})
}

// syncPlan brings the shared state's plan to the checkpointed one before
// the run's last event: the agent closes some steps (respond) without a step
// event, and the state must agree with GET /api/threads/{id}/plan.
func (m *aguiMapper) syncPlan() {
	st, _, err := m.s.cfg.Runner.State(context.Background(), m.thread)
	if err != nil || st.Turn.Plan == nil {
		return
	}
	p := st.Turn.Plan
	if m.rawPlan == nil || m.rawPlan.Number != p.Number || len(m.plan) != len(p.Steps) {
		m.event(agent.Event{Type: agent.EventPlan, Plan: p})
		return
	}
	var ops []map[string]any
	for i, step := range p.Steps {
		if m.plan[i].Status != string(step.Status) {
			m.plan[i].Status = string(step.Status)
			ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/plan/%d/status", i), "value": step.Status})
		}
	}
	if len(ops) > 0 {
		m.emit(aguiEvent{Type: "STATE_DELTA", Delta: ops})
	}
}

// args is the JSON text of a step's planned parameters.
func (m *aguiMapper) args(step int) string {
	if m.rawPlan == nil || step < 0 || step >= len(m.rawPlan.Steps) || len(m.rawPlan.Steps[step].Parameters) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m.rawPlan.Steps[step].Parameters)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// ensurePlan sends the plan of a resumed run, which saw no plan event,
// from the checkpointed state, so step status deltas have a target.
func (m *aguiMapper) ensurePlan() {
	if m.loaded {
		return
	}
	m.loaded = true
	st, _, err := m.s.cfg.Runner.State(context.Background(), m.thread)
	if err != nil || st.Turn.Plan == nil {
		return
	}
	m.event(agent.Event{Type: agent.EventPlan, Plan: st.Turn.Plan})
}

func (m *aguiMapper) interrupt() aguiInterrupt {
	a := m.approval
	in := aguiInterrupt{ID: a.ID, Reason: "confirmation", Message: a.Summary,
		ResponseSchema: map[string]any{"type": "object", "properties": map[string]any{"approved": map[string]any{"type": "boolean"}}, "required": []string{"approved"}},
		Metadata:       map[string]any{"kind": string(a.Kind), "capability": a.Capability, "step": a.StepIndex}}
	if !a.Expires.IsZero() {
		in.ExpiresAt = a.Expires.UTC().Format(time.RFC3339)
	}
	return in
}
