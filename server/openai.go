package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/openai"
	"github.com/capgraph/capgraph/server/internal/responses"
	"github.com/capgraph/capgraph/server/internal/transcripts"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/google/uuid"
)

// chatCompletions is what the Chat Completions routes need (openai.Deps),
// behind auth.
func (s *Server) chatCompletions(auth func(http.HandlerFunc) http.HandlerFunc) openai.Deps {
	return openai.Deps{Chats: serverChats{s}, Auth: auth, Models: s.chatModels(), MaxMessages: s.cfg.MaxMessages,
		MaxMessageBytes: s.cfg.MaxMessageBytes, DisableTaskGuard: s.cfg.DisableTaskGuard, ArtifactBase: s.artifacts.BaseURL,
		Now: s.cfg.Now, StreamWriteTimeout: s.cfg.StreamWriteTimeout, Heartbeat: s.cfg.Heartbeat}
}

// responsesAPI is what the Responses routes need (responses.Deps),
// behind auth.
func (s *Server) responsesAPI(auth func(http.HandlerFunc) http.HandlerFunc) responses.Deps {
	return responses.Deps{Turns: serverTurns{s}, Chats: serverChats{s}, Auth: auth, Models: s.chatModels(), MaxMessages: s.cfg.MaxMessages,
		MaxMessageBytes: s.cfg.MaxMessageBytes, ArtifactBase: s.artifacts.BaseURL,
		Now: s.cfg.Now, StreamWriteTimeout: s.cfg.StreamWriteTimeout, Heartbeat: s.cfg.Heartbeat}
}

// chatModels is Config.Models as the chat handlers know them.
func (s *Server) chatModels() []chatturn.Model {
	models := make([]chatturn.Model, len(s.cfg.Models))
	for i, m := range s.cfg.Models {
		models[i] = chatturn.Model{ID: m.ID, Options: m.Options}
	}
	return models
}

// chatStart is how a Chat Completions (or Responses) turn started: the
// approval its run answers, or a reply to send without a run (an approval
// answered before).
type chatStart struct {
	// token is the approval token the run answers ("" for a new turn).
	token string
	// reply, when set, is the whole answer: no run started.
	reply *chatanswer.Reply
	// clientThread is the thread's client id.
	clientThread string
	// usage goes with reply when it replays a run's answer.
	usage agent.Usage
}

// chatSpec decides which thread a chat turn goes to, and whether it runs
// a new turn or resumes an approval: the run to start, with how it
// started (its approval token, its thread), or no run and the reply to
// send (st.reply). source names the protocol in the thread's metadata.
// A token it claims is the caller's to settle when the run does not
// start (opening.refused).
func (s *Server) chatSpec(ctx context.Context, c caller, t chatturn.Turn, source string) (sp *runSpec, st chatStart, err error) {
	st, sp, err = s.chatRoute(ctx, c, t, source)
	if sp != nil {
		sp.c, sp.source, sp.clientThread, sp.chat, sp.request = c, source, st.clientThread, true, chatDigest(c, t)
	}
	return sp, st, err
}

// chatRoute is chatSpec but for what every chat run has: the answer to
// the approval a token in the conversation names, else a new turn.
func (s *Server) chatRoute(ctx context.Context, c caller, t chatturn.Turn, source string) (chatStart, *runSpec, error) {
	st, sp, stale, err := s.chatTokenAnswer(ctx, c, t)
	if err != nil || sp != nil || st.reply != nil {
		return st, sp, err
	}
	return s.chatNewTurn(ctx, c, t, source, stale)
}

// chatTokenAnswer is the run answering the approval whose token the
// message carries (or the reply when it cannot: being carried out,
// carried out before, another conversation's). stale is a token that
// matches no approval waiting for this caller: the message then answers
// nothing (guardAnswer). Without a token: nothing.
func (s *Server) chatTokenAnswer(ctx context.Context, c caller, t chatturn.Turn) (st chatStart, sp *runSpec, stale string, err error) {
	tok, ok := t.Token, t.Token != ""
	if !ok && t.Thread == "" {
		tok, ok = approvaltoken.Find(t.LastAssistant)
	}
	if !ok {
		return chatStart{}, nil, "", nil
	}
	ticket, res := s.approvals.Claim(ownerKey(c), tok, s.cfg.Now())
	if res == approvaltoken.ClaimNone {
		// Not issued by this process (a restart, another replica): the
		// checkpoint store knows it (approvaltoken.go).
		if ticket, res, err = s.claimStored(ctx, c, tok); err != nil {
			return chatStart{}, nil, "", err
		}
	}
	switch res {
	case approvaltoken.ClaimBusy:
		return chatStart{}, nil, "", &apierror.RequestError{Kind: apierror.ErrConflict, Message: "this approval is being carried out; wait for its answer"}
	case approvaltoken.ClaimReplay:
		// A repeated request (an SDK retry, a resent message): the
		// approval was carried out once; say again what it answered.
		return chatStart{reply: &ticket.Reply, clientThread: ticket.ClientThread}, nil, "", nil
	case approvaltoken.ClaimOK:
		defer s.approvals.ReleaseOnPanic(tok)
		fits, own, err := s.tokenFits(ctx, c, t, ticket)
		if err != nil || !fits {
			s.approvals.Settle(tok, nil) // still unanswered, for its own conversation
			if err != nil {
				return chatStart{}, nil, "", err
			}
			reply := foreignTokenReply()
			s.remember(c, t, own, reply)
			return chatStart{reply: &reply, clientThread: own}, nil, "", nil
		}
		ans := agent.Answer{ApprovalID: ticket.ApprovalID, Text: tokenAnswer(t.Input, tok), Token: tok, By: callerName(c)}
		return chatStart{token: tok, clientThread: ticket.ClientThread}, &runSpec{kind: kindAnswer, answer: &ans, thread: ticket.Thread}, "", nil
	}
	return chatStart{}, nil, tok, nil
}

// chatNewTurn is the run of a new turn in the request's conversation, or
// the reply when the message answers (or fails to answer) an approval the
// thread waits for (guardAnswer) instead.
func (s *Server) chatNewTurn(ctx context.Context, c caller, t chatturn.Turn, source, stale string) (_ chatStart, sp *runSpec, err error) {
	clientThread, fresh, transcript, reply, err := s.chatConversation(ctx, c, t, source, stale)
	if err != nil || reply != nil {
		return chatStart{reply: reply, clientThread: clientThread}, nil, err
	}
	if fresh != nil {
		defer func() {
			if sp == nil {
				fresh.drop() // no run: nothing to make it with
			}
		}()
	}
	thread := internalThreadID(c, clientThread)
	if fresh == nil {
		// A thread that may wait for an approval: see what this message
		// may answer.
		reply, err := s.guardAnswer(ctx, c, thread, clientThread, t.Input, stale)
		if err != nil {
			return chatStart{}, nil, err
		}
		if reply != nil {
			s.remember(c, t, clientThread, *reply)
			return chatStart{reply: reply, clientThread: clientThread}, nil, nil
		}
	} else if reply := staleAnswerReply(t.Input, stale); reply != nil {
		// Nothing waits in a new conversation: a yes or no next to the
		// token answered nothing.
		return chatStart{reply: reply, clientThread: clientThread}, nil, nil
	}
	extra := map[string]string{metaApprovalKey: approvalTokenKey(ownerKey(c), thread)}
	if transcript != "" {
		extra[metaTranscript] = transcript
	}
	req, err := s.openTurn(c, turns.TurnOpening{Field: "messages", Input: t.Input, Options: t.Options, Source: source, ClientThread: clientThread, Thread: thread, ClientMeta: t.ClientMeta, ExtraMeta: extra})
	if err != nil {
		// The profile asks for an option looser than the agent's
		// configuration, which this key may not raise.
		var le *agent.LoosenError
		if errors.As(err, &le) {
			err = &apierror.RequestError{Kind: le, Param: "model", Message: fmt.Sprintf("the model profile %q asks for %s", t.ModelID, le.Error())}
		}
		return chatStart{}, nil, err
	}
	return chatStart{clientThread: clientThread}, &runSpec{kind: kindTurn, turn: &req, thread: thread, fresh: fresh != nil, newThread: fresh}, nil
}

// chatConversation names the thread of the request's conversation: the
// one it names, the forwarded chat id's, else the one its transcript
// continues (transcript.go), or a new one: fresh, to be made with the
// turn's run (submit) or dropped. transcript is the digest that names it
// ("" for the others). A
// message answering a stale token with no conversation to answer in gets
// reply instead.
func (s *Server) chatConversation(ctx context.Context, c caller, t chatturn.Turn, source, stale string) (clientThread string, fresh *newThread, transcript string, reply *chatanswer.Reply, err error) {
	switch {
	case t.Thread != "":
		return t.Thread, nil, "", nil, nil
	case c.ChatID != "":
		clientThread = "openwebui:" + c.ChatID
		if err := turns.CheckThreadID(headerChatID, clientThread); err != nil {
			return "", nil, "", nil, err
		}
		_, fresh, err := s.prepareThread(ctx, c, clientThread, source, nil)
		return clientThread, fresh, "", nil, err
	}
	ct, ok, err := s.continuedThread(ctx, c, t.Msgs)
	if err != nil {
		return "", nil, "", nil, err
	}
	if !ok {
		if reply := staleAnswerReply(t.Input, stale); reply != nil {
			return "", nil, "", reply, nil // no conversation to open for it
		}
		ct = "chat-" + uuid.NewString()
		if _, fresh, err = s.prepareThread(ctx, c, ct, source, t.ClientMeta); err != nil {
			return "", nil, "", nil, err
		}
	}
	return ct, fresh, transcriptDigest(c, t.Msgs), nil, nil
}

// allowedCapabilities is what the agent enforces for c: nil (no
// restriction) unless the principal names capabilities.
func allowedCapabilities(c caller) []string {
	if len(c.Principal.AllowedCapabilities) == 0 {
		return nil
	}
	return c.Principal.AllowedCapabilities
}

// rememberTranscript makes the conversation so far, reply included, name
// the run's thread (transcript.go). Threads named by a trusted frontend's
// chat id need no transcript.
func (s *Server) rememberTranscript(c caller, t chatturn.Turn, ru *run, reply string) {
	if c.ChatID != "" {
		return
	}
	full := append(slices.Clip(t.Msgs), transcripts.Msg{Role: "assistant", Text: reply})
	s.transcripts.Set(ru.ClientThread, ru.Thread, transcriptDigest(c, t.Msgs), transcriptDigest(c, full))
}

// finishApproval returns the text to append to the answer: the turn's
// artifacts (artifacts.go), and when the run ended waiting for approval,
// the token it issues.
func (s *Server) finishApproval(c caller, ru *run, rd *chatanswer.Renderer) string {
	arts := s.artifacts.Markdown(rd.Base, ru.Thread, rd.Artifacts)
	if rd.Approval == nil || rd.Status != agent.RunInterrupted {
		return arts
	}
	tok := s.approvals.Issue(approvaltoken.Ticket{Token: approvalToken(ownerKey(c), ru.Thread, *rd.Approval),
		Owner: ownerKey(c), Thread: ru.Thread, ClientThread: ru.ClientThread,
		ApprovalID: rd.Approval.ID, Expires: s.tokenExpiry(*rd.Approval, s.cfg.Now())}, s.cfg.Now())
	if arts != "" && rd.Content.Len() == 0 {
		arts += "\n\n" // the approval's summary starts a paragraph of its own
	}
	return arts + chatanswer.ApprovalText(rd.Approval, tok, rd.Content.Len() > 0)
}

// chatRunEnd is how a followed chat run ended, for both answer forms: left
// when the client went away (the run is canceled; nothing more is sent),
// else the run's error (run.endNote says how it ended). An
// approval answered by this request (token) whose run left or failed is
// settled with a reply saying so, so a retried request gets it.
//
// An answer the agent refuses as already answered (ErrApprovalAnswered:
// another replica carried it out between this request's lookup and its
// resume) is no failure: replay is what the first answer became.
func (s *Server) chatRunEnd(r *http.Request, c caller, ru *run, followed bool, token string) (left bool, replay *chatanswer.Reply, runErr error) {
	ctx := r.Context()
	if !followed {
		ru.Leave(turns.Repeatable(r)) // the client left; the run stops unless a repeat of the request follows it
		if token != "" {
			s.approvals.Settle(token, &chatanswer.Reply{Content: "(the client disconnected while this approval was carried out)"})
		}
		return true, nil, nil
	}
	_, runErr, _ = ru.Result()
	if ae, ok := errors.AsType[*agent.ApprovalError](runErr); ok && token != "" {
		switch {
		case errors.Is(ae, agent.ErrApprovalUnclear):
			// Nothing was decided: the token stays open, and the human
			// is asked again with it.
			s.approvals.Settle(token, nil)
			reply := unclearReply(token, ae)
			return false, &reply, nil
		case errors.Is(ae, agent.ErrApprovalExpired):
			reply := expiredReply(ae)
			s.approvals.Settle(token, &reply)
			return false, &reply, nil
		}
	}
	if runErr != nil && token != "" && errors.Is(runErr, agent.ErrApprovalAnswered) {
		if sa, ok, err := s.resolveStoredToken(ctx, c, token); err == nil && ok && sa.answered != nil {
			reply := answeredReply(token, *sa.answered, sa.st, sa.status)
			s.approvals.Settle(token, &reply)
			return false, &reply, nil
		}
	}
	if runErr != nil && token != "" && errors.Is(runErr, agent.ErrThreadBusy) {
		// Not answered: another process holds the thread (it carries
		// the same answer out, or another run). A retry looks again.
		s.approvals.Settle(token, nil)
		return false, nil, runErr
	}
	if runErr != nil && token != "" {
		if s.stillPending(ctx, ru.Thread, token) {
			// The answer was never carried out (the run failed before it
			// took it): the token is released, so the human can answer
			// again instead of meeting "being carried out" (409).
			s.approvals.Settle(token, nil)
		} else {
			s.approvals.Settle(token, &chatanswer.Reply{Content: "The run failed: " + s.publicMessage(runErr)})
		}
	}
	return false, nil, runErr
}

// Identity is the id of r and when it started (chatturn.Run). Started is
// read under the lock: submit sets it from the record after the run is
// registered, where a repeated request may already have found it.
func (r *run) Identity() (string, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ID, r.Started
}
