package agui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/msgtext"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/google/uuid"
)

// Deps is what the AG-UI route needs of the server.
type Deps struct {
	Turns turns.Turns
	// MaxMessages bounds the messages of a request.
	MaxMessages int
	Now         func() time.Time
	// StreamWriteTimeout bounds a frame's write; Heartbeat is how often
	// an idle stream says it is alive.
	StreamWriteTimeout time.Duration
	Heartbeat          time.Duration
}

// Handler is POST /agui: a turn with the request's last user message, or,
// with resume, the answer to the thread's approval, streamed as AG-UI
// events until the run ends.
func Handler(d Deps) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { d.serve(w, r) }
}

// spec is the run an AG-UI request asks for: a turn with its last user
// message, or, with resume, the answer to the thread's approval. It opens
// the thread (th) after everything is checked, so a refused request
// leaves nothing behind; a resume that answers nothing starts no run and
// is told in the stream (resumeErr).
func (d Deps) spec(ctx context.Context, in Input, th *turns.Thread, resumeErr *error) (*turns.Spec, error) {
	t := d.Turns
	sp := &turns.Spec{Source: "agui", ClientThread: in.ThreadID, Thread: t.InternalThread(ctx, in.ThreadID)}
	if len(in.Resume) == 0 {
		var opts *agent.TurnOptions
		if in.ForwardedProps != nil {
			opts = in.ForwardedProps.Options
		}
		input, err := lastUserText(in.Messages)
		if err != nil {
			return nil, err
		}
		req, err := t.OpenTurn(ctx, turns.TurnOpening{Field: "messages", Input: input, Options: opts, Source: "agui", ClientThread: in.ThreadID, Thread: sp.Thread})
		if err != nil {
			return nil, err
		}
		sp.Turn = &req
	}
	var err error
	if *th, err = t.OpenThread(ctx, in.ThreadID, "agui"); err != nil {
		return nil, err
	}
	if len(in.Resume) > 0 {
		ans, err := d.answer(ctx, *th, in.Resume)
		if err != nil {
			*resumeErr = err
			return nil, nil
		}
		sp.Answer = &ans
	}
	return sp, nil
}

func (d Deps) serve(w http.ResponseWriter, r *http.Request) {
	t := d.Turns
	var in Input
	if err := reqbody.Decode(r, &in); err != nil {
		t.WriteError(w, err)
		return
	}
	if err := turns.CheckThreadID("threadId", in.ThreadID); err != nil {
		t.WriteError(w, err)
		return
	}
	if in.RunID != "" && !turns.ValidThreadID(in.RunID) {
		t.WriteError(w, apierror.BadRequest("runId", "%s is not a valid run id: a run id is %s", turns.QuoteForClient(in.RunID), turns.ThreadIDRule))
		return
	}
	if len(in.Messages) > d.MaxMessages {
		t.WriteError(w, apierror.BadRequest("messages", "%d messages exceed the limit of %d", len(in.Messages), d.MaxMessages))
		return
	}
	if in.RunID == "" {
		in.RunID = uuid.NewString()
	}
	var (
		th        turns.Thread
		resumeErr error // a resume that answers nothing: said in the stream
	)
	op, ok := t.Open(turns.Opening{W: w, R: r, Scope: "agui:" + t.InternalThread(r.Context(), in.ThreadID),
		Spec: func(ctx context.Context, _ string) (*turns.Spec, error) {
			return d.spec(ctx, in, &th, &resumeErr)
		}})
	if !ok {
		return
	}
	ru := op.Run
	if op.Dup != nil {
		w.Header().Set(turns.HeaderReplayed, "true")
		var joined bool
		if ru, joined = t.RunByID(op.Dup.ID); !joined {
			t.WriteError(w, &apierror.RequestError{Kind: apierror.ErrConflict, Message: fmt.Sprintf("this Idempotency-Key started run %s, which ended as %s or runs elsewhere; read the thread's state", op.Dup.ID, op.Dup.Status)})
			return
		}
	}
	sse := sse.Start(w, d.Now, d.StreamWriteTimeout)
	m := NewMapper(sse, d.Now, t.ThreadState, in.ThreadID, in.RunID, th.Internal)
	m.Emit(Event{Type: "RUN_STARTED", ThreadID: in.ThreadID, RunID: in.RunID})
	if resumeErr != nil {
		m.Emit(Event{Type: "RUN_ERROR", Message: t.PublicMessage(resumeErr), Code: "invalid_resume"})
		return
	}
	ru.Join()
	ok = ru.Follow(r.Context(), 0, d.Heartbeat, sse, m.Event, func() {
		if sse.Idle(d.Heartbeat) {
			m.Emit(Event{Type: "CUSTOM", Name: "heartbeat", Value: map[string]any{}})
		}
	})
	if !ok {
		ru.Leave(turns.Repeatable(r))
		return
	}
	status, runErr, shutdown := ru.Result()
	m.CloseOpen()
	m.SyncPlan()
	switch {
	case runErr != nil:
		m.Emit(Event{Type: "RUN_ERROR", Message: t.PublicMessage(runErr), Code: "run_failed"})
	case status == agent.RunInterrupted && m.Approval() != nil:
		// AG-UI asks for the state before an interrupting RUN_FINISHED.
		m.Emit(Event{Type: "STATE_SNAPSHOT", Snapshot: m.Snapshot()})
		m.Emit(Event{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID,
			Outcome: &Outcome{Type: "interrupt", Interrupts: []Interrupt{m.Interrupt()}}})
	case shutdown || status == agent.RunCanceled:
		m.Emit(Event{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID, Outcome: &Outcome{Type: "cancelled"}})
	default:
		m.Emit(Event{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID})
	}
}

// answer checks a resume against the thread's pending approval and turns
// it into an agent.Answer. Mismatches are refused (RUN_ERROR).
func (d Deps) answer(ctx context.Context, th turns.Thread, resume []Resume) (agent.Answer, error) {
	if len(resume) != 1 {
		return agent.Answer{}, apierror.BadRequest("resume", "must answer exactly the one pending interrupt, got %d entries", len(resume))
	}
	e := resume[0]
	if err := d.Turns.CheckPending(ctx, th, e.InterruptID); err != nil {
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
				return agent.Answer{}, apierror.BadRequest("resume[0].payload", "must be a JSON object {\"approved\": true|false}")
			}
		}
		if p.Approved == nil {
			return agent.Answer{}, apierror.BadRequest("resume[0].payload", "must say {\"approved\": true|false}")
		}
		approved = *p.Approved
	default:
		return agent.Answer{}, apierror.BadRequest("resume[0].status", "%s: want resolved or cancelled", turns.QuoteForClient(e.Status))
	}
	text := "no"
	if approved {
		text = "yes"
	}
	return agent.Answer{ApprovalID: e.InterruptID, Approved: &approved, Text: text, By: d.Turns.Who(ctx)}, nil
}

// lastUserText is the text of the request's last user message.
func lastUserText(msgs []Message) (string, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		txt, err := msgtext.Of(msgs[i].Content)
		if err != nil {
			return "", apierror.BadRequest(fmt.Sprintf("messages[%d].content", i), "must be a string or an array of content parts")
		}
		if strings.TrimSpace(txt) == "" {
			break
		}
		return txt, nil
	}
	return "", apierror.BadRequest("messages", "no user message to answer")
}
