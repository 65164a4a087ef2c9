package server

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/transcripts"
	"github.com/capgraph/capgraph/state"
)

// An approval token is derived from what the store already holds, so it
// works after a restart and on every replica: docs/frontends.md, "Tokens
// survive restarts and work on every replica".

// metaApprovalKey is the metadata key of a Chat Completions thread's
// approval token key (the first four characters of its tokens).
const metaApprovalKey = "approval_key"

// approvalTokenKey is the thread part of thread's approval tokens.
func approvalTokenKey(owner, thread string) string {
	return digest32("thread", owner, thread)[:4]
}

// approvalToken is the token of approval ap of thread, for owner.
func approvalToken(owner, thread string, ap state.Approval) string {
	return "AP-" + approvalTokenKey(owner, thread) +
		digest32("approval", owner, thread, ap.ID, strconv.FormatInt(ap.Created.UnixMilli(), 10))[:4]
}

// digest32 is the base32 SHA-256 of the length-prefixed parts.
func digest32(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return base32.StdEncoding.EncodeToString(h.Sum(nil))
}

// storedApproval is what the checkpoint store says about a token.
type storedApproval struct {
	ticket approvaltoken.Ticket
	// answered is the decision when the approval was answered already.
	answered *state.ApprovalDecision
	st       state.State
	status   agent.RunStatus
	// between is set when neither matched but the thread's run stands
	// between two steps: a resume that has taken the answer and not yet
	// recorded it (or a run cut there); the token may be its answer.
	between bool
}

// resolveStoredToken finds c's approval with the token in the checkpoint
// store; ok is false when c has none (another principal's, an old turn's
// or a made-up token).
func (s *Server) resolveStoredToken(ctx context.Context, c caller, tok string) (storedApproval, bool, error) {
	if s.features.threads == nil || len(tok) != len("AP-")+8 {
		return storedApproval{}, false, nil
	}
	owner := ownerKey(c)
	f := ownerFilter(c)
	f[metaApprovalKey] = tok[3:7]
	infos, err := s.features.threads.Threads(ctx, agent.ThreadFilter{Metadata: f})
	if err != nil {
		return storedApproval{}, false, err
	}
	var between *storedApproval
	for _, info := range infos {
		th, ok := threadFromInfo(c, info)
		if !ok || approvalTokenKey(owner, info.ThreadID) != tok[3:7] {
			continue
		}
		st, status, err := s.cfg.Runner.State(ctx, info.ThreadID)
		if err != nil {
			return storedApproval{}, false, fmt.Errorf("read thread %s: %w", th.ID, err)
		}
		var pending []state.Approval
		if pl := s.features.approvals; pl != nil && status == agent.RunInterrupted {
			if pending, err = pl.PendingApprovals(ctx, info.ThreadID); err != nil {
				return storedApproval{}, false, fmt.Errorf("read thread %s: %w", th.ID, err)
			}
		} else if st.Turn.PendingApproval != nil {
			pending = []state.Approval{*st.Turn.PendingApproval}
		}
		t := approvaltoken.Ticket{Token: tok, Owner: owner, Thread: info.ThreadID, ClientThread: th.ID}
		for _, ap := range pending {
			if approvalToken(owner, info.ThreadID, ap) == tok {
				t.ApprovalID, t.Expires = ap.ID, s.tokenExpiry(ap, ap.Created)
				return storedApproval{ticket: t, st: st, status: status}, true, nil
			}
		}
		for _, d := range st.Turn.Approvals {
			if approvalToken(owner, info.ThreadID, state.Approval{ID: d.ID, Created: d.Asked}) == tok {
				t.ApprovalID, t.State = d.ID, approvaltoken.Done
				return storedApproval{ticket: t, answered: &d, st: st, status: status}, true, nil
			}
		}
		// Interrupted with nothing pending: the two reads above saw a
		// resume take the answer in between.
		if (status == agent.RunCanceled || status == agent.RunInterrupted && len(pending) == 0) && between == nil {
			between = &storedApproval{ticket: t, st: st, status: status, between: true}
		}
	}
	if between != nil {
		return *between, true, nil
	}
	return storedApproval{}, false, nil
}

// claimStored is claim for a token this process did not issue.
func (s *Server) claimStored(ctx context.Context, c caller, tok string) (approvaltoken.Ticket, approvaltoken.ClaimResult, error) {
	sa, ok, err := s.resolveStoredToken(ctx, c, tok)
	if err != nil || !ok {
		return approvaltoken.Ticket{}, approvaltoken.ClaimNone, err
	}
	if sa.answered != nil {
		sa.ticket.Reply = answeredReply(tok, *sa.answered, sa.st, sa.status)
		return sa.ticket, approvaltoken.ClaimReplay, nil
	}
	if sa.between {
		// Not a new question: starting a turn with "yes AP-…" once
		// the resume ends would answer nothing. Let the client retry.
		return sa.ticket, approvaltoken.ClaimBusy, nil
	}
	if !sa.ticket.Expires.IsZero() && s.cfg.Now().After(sa.ticket.Expires) {
		return approvaltoken.Ticket{}, approvaltoken.ClaimNone, nil
	}
	t, res := s.approvals.Adopt(sa.ticket)
	return t, res, nil
}

// answeredReply is the reply to a repeated answer of an approval another
// process (or an earlier life of this one) carried out: the agent carried
// it out once, and this says what became of it.
func answeredReply(tok string, d state.ApprovalDecision, st state.State, status agent.RunStatus) chatanswer.Reply {
	verdict := "rejected"
	if d.Approved {
		verdict = "approved"
	}
	text := fmt.Sprintf("Approval %s was already answered (%s); it is carried out once.", tok, verdict)
	switch d.Rule {
	case state.AnswerExpired:
		text = fmt.Sprintf("Approval %s had expired before it was answered; nothing was done.", tok)
	case state.AnswerSuperseded:
		text = fmt.Sprintf("Approval %s was replaced by a new message before it was answered; nothing was done.", tok)
	}
	if status == agent.RunCanceled {
		// Between two steps of the resumed run, here or on another
		// replica (or cut by a crash, until the run is recovered).
		text += " Its run has not finished yet; send your message again for its result."
	}
	if status == agent.RunAnswered {
		for i := len(st.Messages) - 1; i >= 0; i-- {
			if m := st.Messages[i]; m.Role == "assistant" && m.Turn == st.Turn.Number {
				text = m.Content + "\n\n(" + text + ")"
				break
			}
		}
	}
	return chatanswer.Reply{Content: text}
}

// stillPending reports whether the thread still waits for the approval the
// token answers: a run that failed before taking the answer left it so.
func (s *Server) stillPending(ctx context.Context, thread, token string) bool {
	id, ok := s.approvals.ApprovalOf(token)
	if !ok {
		return false
	}
	ctx = context.WithoutCancel(ctx)
	if pl := s.features.approvals; pl != nil {
		aps, err := pl.PendingApprovals(ctx, thread)
		return err == nil && slices.ContainsFunc(aps, func(ap state.Approval) bool { return ap.ID == id })
	}
	st, status, err := s.cfg.Runner.State(ctx, thread)
	return err == nil && status == agent.RunInterrupted && st.Turn.PendingApproval != nil && st.Turn.PendingApproval.ID == id
}

// threadOfToken is the client id of c's thread that asked for the
// approval with the token, answered or not (transcript.go).
func (s *Server) threadOfToken(ctx context.Context, c caller, tok string) (string, bool, error) {
	sa, ok, err := s.resolveStoredToken(ctx, c, tok)
	if err != nil || !ok {
		return "", false, err
	}
	return sa.ticket.ClientThread, true, nil
}

// tokenExpiry is when a token for ap stops being accepted: the approval's
// own expiry when the agent set one (the agent refuses a late answer
// anyway, so the two must agree), otherwise ApprovalTTL after from.
func (s *Server) tokenExpiry(ap state.Approval, from time.Time) time.Time {
	if !ap.Expires.IsZero() {
		return ap.Expires
	}
	return from.Add(s.cfg.ApprovalTTL)
}

// A chat message answers an approval only through the approval's own token
// (docs/approvals.md, "Only a human approves"; docs/frontends.md,
// "Approvals"): a token that matches no approval waiting in this
// conversation — made up, mistyped, expired, another principal's, another
// conversation's — answers nothing, and a yes or no next to it is never
// carried to another approval.

// pendingApprovals lists what thread waits for (none for a thread that
// does not exist or does not wait).
func (s *Server) pendingApprovals(ctx context.Context, thread string) ([]state.Approval, error) {
	st, status, err := s.cfg.Runner.State(ctx, thread)
	if errors.Is(err, agent.ErrUnknownThread) || err == nil && status != agent.RunInterrupted {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if pl := s.features.approvals; pl != nil {
		return pl.PendingApprovals(ctx, thread)
	}
	if st.Turn.PendingApproval != nil {
		return []state.Approval{*st.Turn.PendingApproval}, nil
	}
	return nil, nil
}

// tokenAnswer is what the agent reads of a chat message answering the
// approval with token tok: the message without the token (answerText) —
// and a question stays one: answerText trims the punctuation around the
// token, "?" among it, but "ok? AP-…" asks, it does not approve.
func tokenAnswer(input, tok string) string {
	if tok == "" {
		return input
	}
	text := approvaltoken.AnswerText(input, tok)
	if strings.Contains(input, "?") && !strings.Contains(text, "?") {
		text += "?"
	}
	return text
}

// tokenFits reports whether the conversation of t may answer the approval
// of ticket, found by the token in its last assistant message: the token
// must belong to the thread the conversation is (its Open WebUI chat id,
// else its transcript), so a token pasted into another conversation's
// history answers nothing there. A conversation whose transcript names no
// thread (a client that rewrites our answers, a restart after an approved
// run) is named by the token alone (docs/frontends.md, "Which thread?").
// When it does not fit, own is the client id of the conversation's own
// thread ("" when the transcript names several or none).
func (s *Server) tokenFits(ctx context.Context, c caller, t chatturn.Turn, ticket approvaltoken.Ticket) (fits bool, own string, err error) {
	switch {
	case t.Thread != "":
		return true, "", nil // the token is the one the thread named by the request waits for (Responses)
	case c.ChatID != "":
		own = "openwebui:" + c.ChatID
		return ticket.ClientThread == own, own, nil
	}
	hist := t.Msgs[:len(t.Msgs)-1]
	full, prefix := transcriptDigest(c, hist), transcriptDigest(c, transcripts.WithoutTrailingReply(hist))
	if s.transcripts.Holds(ticket.Thread, full) || s.transcripts.Holds(ticket.Thread, prefix) {
		return true, "", nil
	}
	named := map[string]bool{}
	for _, d := range []string{full, prefix} {
		if ct, ok := s.transcripts.Get(d); ok {
			named[ct] = true
		}
	}
	if s.features.threads != nil {
		f := ownerFilter(c)
		f[metaTranscript] = prefix
		infos, err := s.features.threads.Threads(ctx, agent.ThreadFilter{Metadata: f})
		if err != nil {
			return false, "", err
		}
		for _, info := range infos {
			if th, ok := threadFromInfo(c, info); ok {
				named[th.ID] = true
			}
		}
	}
	if len(named) == 0 || named[ticket.ClientThread] {
		return true, "", nil
	}
	if len(named) == 1 {
		for ct := range named {
			own = ct
		}
	}
	return false, own, nil
}

// remember makes reply, a reply no run wrote, part of the conversation of
// t on the caller's thread clientThread, so that the conversation's next
// request still names that thread by its transcript.
func (s *Server) remember(c caller, t chatturn.Turn, clientThread string, reply chatanswer.Reply) {
	if c.ChatID != "" || clientThread == "" {
		return // a chat id names the thread; nothing to remember
	}
	full := append(slices.Clip(t.Msgs), transcripts.Msg{Role: "assistant", Text: reply.Content})
	s.transcripts.Add(clientThread, internalThreadID(c, clientThread), transcriptDigest(c, full))
}

// The replies below name no token: the next request reads the token of
// the conversation from its last assistant message, which is then this
// reply (the one that did not fit stays out of it).

// foreignTokenReply answers a conversation whose last assistant message
// holds another conversation's approval token.
func foreignTokenReply() chatanswer.Reply {
	return chatanswer.Reply{Content: "The approval token in this conversation belongs to another conversation, so this message answered nothing and nothing was done. " +
		"Answer it in the conversation that asked for it."}
}

// guardAnswer decides, before a chat message on thread starts a turn,
// whether it may: agent.Run takes a clear yes or no as the answer to the
// approval the thread waits for, which only a message answering that
// approval's own token may be. stale is the token the conversation's last
// assistant message named when it matched no waiting approval ("" when
// it named none). A non-nil reply is the whole answer (no run):
//
//   - an approval whose token the server no longer accepts (its expiry, or
//     Config.ApprovalTTL for one without) is ended as expired first
//     (Agent.ExpireApproval), so no yes reaches it;
//   - with a stale token, a yes or no answers nothing: the reply says so and
//     shows again the approval the conversation waits for, with its token.
//
// Anything but a yes or no is a new question, which supersedes the approval.
func (s *Server) guardAnswer(ctx context.Context, c caller, thread, clientThread, input, stale string) (*chatanswer.Reply, error) {
	words := input
	if stale != "" {
		words = tokenAnswer(input, stale) // "yes AP-…" is a yes to that token
	}
	if !agent.ParseYes(words) && !agent.ParseNo(words) {
		return nil, nil
	}
	pending, err := s.pendingApprovals(ctx, thread)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	owner := ownerKey(c)
	var (
		open    []state.Approval
		expired bool // the stale token is an approval's that expired
	)
	for _, ap := range pending {
		if now.Before(s.tokenExpiry(ap, ap.Created)) {
			open = append(open, ap)
			continue
		}
		// Its time is over (the agent's expiry, or only the token's,
		// ApprovalTTL): end it now as an expiry, so that no yes reaches it.
		ex := s.features.approvals
		if ex == nil {
			return &chatanswer.Reply{Content: fmt.Sprintf("The approval (%s) expired before your answer, so nothing was done. Send a new message to start again.", ap.Summary)}, nil
		}
		if err := ex.ExpireApproval(ctx, thread, ap.ID); err != nil && !errors.Is(err, agent.ErrApprovalAnswered) &&
			!errors.Is(err, agent.ErrApprovalExpired) && !errors.Is(err, agent.ErrApprovalNotPending) {
			return nil, err
		}
		expired = expired || stale != "" && approvalToken(owner, thread, ap) == stale
	}
	if stale == "" {
		return nil, nil // the conversation shows no token: a yes answers the approval it waits for
	}
	reply := staleTokenReply(words)
	if expired {
		reply = chatanswer.Reply{Content: "The approval expired before your answer, so it was not carried out and nothing was done."}
	}
	if len(open) == 0 {
		return &reply, nil
	}
	ap := slices.MaxFunc(open, func(a, b state.Approval) int { return a.Created.Compare(b.Created) })
	tok := s.approvals.Issue(approvaltoken.Ticket{Token: approvalToken(owner, thread, ap), Owner: owner, Thread: thread, ClientThread: clientThread,
		ApprovalID: ap.ID, Expires: s.tokenExpiry(ap, ap.Created)}, now)
	reply.Content += "\n\nThis conversation waits for your answer to:\n\n" + strings.TrimPrefix(chatanswer.ApprovalText(&ap, tok, false), "\n\n")
	return &reply, nil
}

// staleAnswerReply is the reply to input when it is a yes or no next to
// stale, a token that matches no approval waiting for the caller; nil
// when there is no such token or input is anything else.
func staleAnswerReply(input, stale string) *chatanswer.Reply {
	if stale == "" {
		return nil
	}
	if words := tokenAnswer(input, stale); agent.ParseYes(words) || agent.ParseNo(words) {
		reply := staleTokenReply(words)
		return &reply
	}
	return nil
}

// staleTokenReply answers a yes or no next to a token that matches no
// approval waiting for the caller.
func staleTokenReply(input string) chatanswer.Reply {
	return chatanswer.Reply{Content: fmt.Sprintf("The approval token in this conversation matches no approval waiting for your answer (it is unknown, expired or not yours), "+
		"so your %q answered nothing and nothing was done.", input)}
}

// unclearReply asks again for the approval with token tok, whose answer
// decided nothing (agent.ErrApprovalUnclear).
func unclearReply(tok string, ae *agent.ApprovalError) chatanswer.Reply {
	text := fmt.Sprintf("Your answer %q is neither a yes nor a no, so nothing was decided: the approval is still waiting.", ae.Answer)
	if ae.Approval != nil {
		return chatanswer.Reply{Content: text + "\n\n" + strings.TrimPrefix(chatanswer.ApprovalText(ae.Approval, tok, false), "\n\n")}
	}
	return chatanswer.Reply{Content: text + fmt.Sprintf("\n\nApproval ID: %s — reply \"yes\" to proceed or \"no\" to cancel.", tok)}
}

// expiredReply says that the answer came too late: the agent ended the
// approval as expired (agent.ErrApprovalExpired).
func expiredReply(ae *agent.ApprovalError) chatanswer.Reply {
	when := ""
	if !ae.Expires.IsZero() {
		when = " at " + ae.Expires.UTC().Format(time.RFC3339)
	}
	return chatanswer.Reply{Content: fmt.Sprintf("The approval expired%s before your answer, so it was not carried out and nothing was done.", when)}
}
