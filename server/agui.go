package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/agui"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/openai"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/state"
	"github.com/google/uuid"
)

// aguiSpec is the run an AG-UI request asks for: a turn with its last
// user message, or, with resume, the answer to the thread's approval. It
// opens the thread (th) after everything is checked, so a refused request
// leaves nothing behind; a resume that answers nothing starts no run and
// is told in the stream (resumeErr).
func (s *Server) aguiSpec(ctx context.Context, c caller, in agui.Input, th *apiThread, resumeErr *error) (*runSpec, error) {
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

func (s *Server) handleAGUI(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	var in agui.Input
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
		th        apiThread
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
		if ru, joined = s.runs.ByID(op.dup.ID); !joined {
			s.writeError(w, &apierror.RequestError{Kind: apierror.ErrConflict, Message: fmt.Sprintf("this Idempotency-Key started run %s, which ended as %s or runs elsewhere; read the thread's state", op.dup.ID, op.dup.Status)})
			return
		}
	}
	sse := sse.Start(w, s.cfg.Now, s.cfg.StreamWriteTimeout)
	m := agui.NewMapper(sse, s.cfg.Now, s.threadState, in.ThreadID, in.RunID, th.internal)
	m.Emit(agui.Event{Type: "RUN_STARTED", ThreadID: in.ThreadID, RunID: in.RunID})
	if resumeErr != nil {
		m.Emit(agui.Event{Type: "RUN_ERROR", Message: s.publicMessage(resumeErr), Code: "invalid_resume"})
		return
	}
	ru.Join()
	ok = s.follow(r.Context(), ru, 0, sse, m.Event, func() {
		if sse.Idle(s.cfg.Heartbeat) {
			m.Emit(agui.Event{Type: "CUSTOM", Name: "heartbeat", Value: map[string]any{}})
		}
	})
	if !ok {
		ru.Leave(repeatable(r))
		return
	}
	status, runErr, shutdown := ru.Result()
	m.CloseOpen()
	m.SyncPlan()
	switch {
	case runErr != nil:
		m.Emit(agui.Event{Type: "RUN_ERROR", Message: s.publicMessage(runErr), Code: "run_failed"})
	case status == agent.RunInterrupted && m.Approval() != nil:
		// AG-UI asks for the state before an interrupting RUN_FINISHED.
		m.Emit(agui.Event{Type: "STATE_SNAPSHOT", Snapshot: m.Snapshot()})
		m.Emit(agui.Event{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID,
			Outcome: &agui.Outcome{Type: "interrupt", Interrupts: []agui.Interrupt{m.Interrupt()}}})
	case shutdown || status == agent.RunCanceled:
		m.Emit(agui.Event{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID, Outcome: &agui.Outcome{Type: "cancelled"}})
	default:
		m.Emit(agui.Event{Type: "RUN_FINISHED", ThreadID: in.ThreadID, RunID: in.RunID})
	}
}

// aguiAnswer checks a resume against the thread's pending approval and
// turns it into an agent.Answer. Mismatches are refused (RUN_ERROR).
func (s *Server) aguiAnswer(ctx context.Context, th apiThread, resume []agui.Resume) (agent.Answer, error) {
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

func lastUserText(msgs []agui.Message) (string, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "user" {
			continue
		}
		txt, err := openai.ChatMessage{Role: "user", Content: msgs[i].Content}.Text()
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

// threadState reads an internal thread's state (the agent's), for the
// protocol packages.
func (s *Server) threadState(ctx context.Context, thread string) (state.State, error) {
	st, _, err := s.cfg.Runner.State(ctx, thread)
	return st, err
}
