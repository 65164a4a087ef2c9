package agui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/answertext"
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

type Input struct {
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Messages []Message       `json:"messages"`
	Resume   []Resume        `json:"resume"`
	State    json.RawMessage `json:"state"`
	// ForwardedProps may carry {"options": {...}}: the turn's options,
	// which may only tighten the agent's configuration (403 otherwise).
	ForwardedProps *Props `json:"forwardedProps"`
}

type Props struct {
	Options *agent.TurnOptions `json:"options"`
}

type Message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type Resume struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved | cancelled
	Payload     json.RawMessage `json:"payload"`
}

// Event is any AG-UI event; fields are omitted when empty so the
// client's strict schema never sees a null.
type Event struct {
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
	Outcome     *Outcome       `json:"outcome,omitempty"`
	Message     string         `json:"message,omitempty"`
	Code        string         `json:"code,omitempty"`
	Name        string         `json:"name,omitempty"`
	Value       any            `json:"value,omitempty"`
	ParentMsgID string         `json:"parentMessageId,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

type Outcome struct {
	Type       string      `json:"type"`
	Interrupts []Interrupt `json:"interrupts,omitempty"`
}

type Interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	ExpiresAt      string         `json:"expiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// PlanStep is one entry of the plan in the AG-UI state.
type PlanStep struct {
	Step       int    `json:"step"`
	Capability string `json:"capability"`
	Objective  string `json:"objective,omitempty"`
	Status     string `json:"status"`
}

// Mapper turns one run's agent events into AG-UI events, keeping the
// bookkeeping the client's verifier checks: steps and messages are closed
// before RUN_FINISHED, every tool call gets a result.
type Mapper struct {
	// now is the server's clock; state reads the internal thread's
	// state (the agent's).
	now      func() time.Time
	state    func(ctx context.Context, thread string) (state.State, error)
	sse      *sse.Writer
	threadID string
	runID    string

	steps    map[string]bool // open STEP_STARTED names
	stepList []string
	msgID    string          // open text message
	streamed strings.Builder // answer text streamed since the last reset
	plan     []PlanStep
	calls    map[int]string // plan step → open tool call id
	approval *state.Approval
	attempt  map[int]int
	rawPlan  *state.Plan
	thread   string // internal id, to load the plan of a resumed run
	loaded   bool
}

func (m *Mapper) Emit(e Event) {
	e.Timestamp = m.now().UnixMilli()
	m.sse.Data(e)
}

func (m *Mapper) Event(ev agent.Event) {
	switch ev.Type {
	case agent.EventNodeStart:
		if ev.Node != "" && !m.steps[ev.Node] {
			m.steps[ev.Node] = true
			m.stepList = append(m.stepList, ev.Node)
			m.Emit(Event{Type: "STEP_STARTED", StepName: ev.Node})
		}
	case agent.EventNodeEnd:
		m.finishStep(ev.Node)
	case agent.EventStatus:
		m.Emit(Event{Type: "CUSTOM", Name: "status", Value: map[string]any{"text": ev.Text}})
	case agent.EventPlan:
		if ev.Plan == nil {
			return
		}
		m.rawPlan, m.loaded = ev.Plan, true
		m.plan = m.plan[:0]
		for i, st := range ev.Plan.Steps {
			m.plan = append(m.plan, PlanStep{Step: i, Capability: st.Capability, Objective: st.TaskObjective, Status: string(st.Status)})
		}
		m.Emit(Event{Type: "STATE_SNAPSHOT", Snapshot: m.Snapshot()})
	case agent.EventStepStart:
		m.ensurePlan()
		m.closeText()
		if m.calls == nil {
			m.calls, m.attempt = map[int]string{}, map[int]int{}
		}
		m.attempt[ev.Step]++
		id := fmt.Sprintf("%s-step%d-a%d", m.runID, ev.Step, m.attempt[ev.Step])
		m.calls[ev.Step] = id
		m.Emit(Event{Type: "TOOL_CALL_START", ToolCallID: id, ToolName: ev.Capability})
		m.Emit(Event{Type: "TOOL_CALL_ARGS", ToolCallID: id, Delta: m.args(ev.Step)})
		m.Emit(Event{Type: "TOOL_CALL_END", ToolCallID: id})
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
			m.Emit(Event{Type: "TOOL_CALL_START", ToolCallID: id, ToolName: ev.Capability})
			m.Emit(Event{Type: "TOOL_CALL_END", ToolCallID: id})
		}
		delete(m.calls, ev.Step)
		content, st := "ok"+answertext.DurationNote(ev.Duration), "done"
		if ev.Err != "" {
			content, st = "failed: "+ev.Err, "failed"
		}
		m.Emit(Event{Type: "TOOL_CALL_RESULT", MessageID: id + "-result", ToolCallID: id, Content: content, Role: "tool"})
		m.setStatus(ev.Step, st)
	case agent.EventArtifact:
		if ev.Artifact != nil {
			// The artifact as it is (docs/frontends.md, "Artifacts").
			m.Emit(Event{Type: "CUSTOM", Name: "artifact", Value: ev.Artifact})
		}
	case agent.EventRetry:
		if ev.Retry != nil {
			m.Emit(Event{Type: "CUSTOM", Name: "retry", Value: ev.Retry})
		}
	case agent.EventAudit:
		// How a side-effecting attempt ended (outcomes.go): the outcome,
		// the changes, the values before and the readback.
		if ev.Audit != nil {
			m.Emit(Event{Type: "CUSTOM", Name: "outcome", Value: ev.Audit})
		}
	case agent.EventDenied:
		m.Emit(Event{Type: "CUSTOM", Name: "denied", Value: map[string]any{"capability": ev.Capability, "step": ev.Step, "text": ev.Text}})
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
			m.Emit(Event{Type: "CUSTOM", Name: "answer_reset", Value: map[string]any{"messageId": id, "reason": ev.Text}})
		}
		m.streamed.Reset()
	case agent.EventMessage:
		if ev.Message != nil {
			if rest := answertext.Unstreamed(ev.Message.Content, m.streamed.String()); rest != "" {
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
			m.Emit(Event{Type: "CUSTOM", Name: "error_report", Value: map[string]any{"messageId": id, "report": ev.Message.Report}})
		}
	case agent.EventApprovalRequired:
		m.approval = ev.Approval
		if ev.Approval != nil {
			m.Emit(Event{Type: "CUSTOM", Name: "approval_required", Value: ev.Approval})
		}
	}
}

// Snapshot is the AG-UI state: the plan with step statuses, and the
// pending approval while the run waits for one.
func (m *Mapper) Snapshot() map[string]any {
	snap := map[string]any{"plan": m.plan}
	if m.rawPlan != nil {
		snap["planNumber"] = m.rawPlan.Number
	}
	if a := m.approval; a != nil {
		snap["pendingApproval"] = map[string]any{"id": a.ID, "kind": a.Kind, "capability": a.Capability, "step": a.StepIndex, "summary": a.Summary}
	}
	return snap
}

func (m *Mapper) finishStep(name string) {
	if !m.steps[name] {
		return
	}
	delete(m.steps, name)
	m.Emit(Event{Type: "STEP_FINISHED", StepName: name})
}

func (m *Mapper) text(s string) {
	if m.msgID == "" {
		m.msgID = "msg-" + uuid.NewString()
		m.Emit(Event{Type: "TEXT_MESSAGE_START", MessageID: m.msgID, Role: "assistant"})
	}
	m.Emit(Event{Type: "TEXT_MESSAGE_CONTENT", MessageID: m.msgID, Delta: s})
}

func (m *Mapper) closeText() {
	if m.msgID != "" {
		m.Emit(Event{Type: "TEXT_MESSAGE_END", MessageID: m.msgID})
		m.msgID = ""
	}
}

// CloseOpen ends whatever is still open before the run's last event.
func (m *Mapper) CloseOpen() {
	m.closeText()
	for _, name := range m.stepList {
		m.finishStep(name)
	}
	for step, id := range m.calls {
		content := "not finished"
		if m.approval != nil {
			content = "waiting for approval"
		}
		m.Emit(Event{Type: "TOOL_CALL_RESULT", MessageID: id + "-result", ToolCallID: id, Content: content, Role: "tool"})
		delete(m.calls, step)
	}
}

func (m *Mapper) setStatus(step int, status string) {
	if step < 0 || step >= len(m.plan) {
		return
	}
	m.plan[step].Status = status
	m.Emit(Event{Type: "STATE_DELTA", Delta: []map[string]any{{"op": "replace", "path": fmt.Sprintf("/plan/%d/status", step), "value": status}}})
}

// SyncPlan brings the shared state's plan to the checkpointed one before
// the run's last event: the agent closes some steps (respond) without a step
// event, and the state must agree with GET /api/threads/{id}/plan.
func (m *Mapper) SyncPlan() {
	st, err := m.state(context.Background(), m.thread)
	if err != nil || st.Turn.Plan == nil {
		return
	}
	p := st.Turn.Plan
	if m.rawPlan == nil || m.rawPlan.Number != p.Number || len(m.plan) != len(p.Steps) {
		m.Event(agent.Event{Type: agent.EventPlan, Plan: p})
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
		m.Emit(Event{Type: "STATE_DELTA", Delta: ops})
	}
}

// args is the JSON text of a step's planned parameters.
func (m *Mapper) args(step int) string {
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
func (m *Mapper) ensurePlan() {
	if m.loaded {
		return
	}
	m.loaded = true
	st, err := m.state(context.Background(), m.thread)
	if err != nil || st.Turn.Plan == nil {
		return
	}
	m.Event(agent.Event{Type: agent.EventPlan, Plan: st.Turn.Plan})
}

func (m *Mapper) Interrupt() Interrupt {
	a := m.approval
	in := Interrupt{ID: a.ID, Reason: "confirmation", Message: a.Summary,
		ResponseSchema: map[string]any{"type": "object", "properties": map[string]any{"approved": map[string]any{"type": "boolean"}}, "required": []string{"approved"}},
		Metadata:       map[string]any{"kind": string(a.Kind), "capability": a.Capability, "step": a.StepIndex}}
	if !a.Expires.IsZero() {
		in.ExpiresAt = a.Expires.UTC().Format(time.RFC3339)
	}
	return in
}

// NewMapper maps the events of run runID on the client's thread threadID
// (thread: the internal id) to frames of w; now is the server's clock,
// state reads the thread's state (the plan of a resumed run, the plan at
// the end).
func NewMapper(w *sse.Writer, now func() time.Time, state func(ctx context.Context, thread string) (state.State, error), threadID, runID, thread string) *Mapper {
	return &Mapper{now: now, state: state, sse: w, threadID: threadID, runID: runID, thread: thread, steps: map[string]bool{}}
}

// Approval is the approval the run asked for (nil when none).
func (m *Mapper) Approval() *state.Approval { return m.approval }
