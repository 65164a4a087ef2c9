package server

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// An approval token is derived from what the store already holds, so it
// works after a restart and on every replica: docs/frontends.md, "Tokens
// survive restarts and work on every replica".

// MetaApprovalKey is the metadata key of a Chat Completions thread's
// approval token key (the first four characters of its tokens).
const MetaApprovalKey = "approval_key"

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

// pendingLister is implemented by *agent.Agent: every approval a thread
// waits for, not only the first (Runner.State).
type pendingLister interface {
	PendingApprovals(ctx context.Context, thread string) ([]state.Approval, error)
}

// storedApproval is what the checkpoint store says about a token.
type storedApproval struct {
	ticket approvalTicket
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
	if s.lister == nil || len(tok) != len("AP-")+8 {
		return storedApproval{}, false, nil
	}
	owner := ownerKey(c)
	f := ownerFilter(c)
	f[MetaApprovalKey] = tok[3:7]
	infos, err := s.lister.Threads(ctx, checkpoint.ThreadFilter{Metadata: f})
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
		if pl, ok := s.cfg.Runner.(pendingLister); ok && status == agent.RunInterrupted {
			if pending, err = pl.PendingApprovals(ctx, info.ThreadID); err != nil {
				return storedApproval{}, false, fmt.Errorf("read thread %s: %w", th.ID, err)
			}
		} else if st.Turn.PendingApproval != nil {
			pending = []state.Approval{*st.Turn.PendingApproval}
		}
		t := approvalTicket{Token: tok, Owner: owner, Thread: info.ThreadID, ClientThread: th.ID}
		for _, ap := range pending {
			if approvalToken(owner, info.ThreadID, ap) == tok {
				t.ApprovalID, t.Expires = ap.ID, s.tokenExpiry(ap, ap.Created)
				return storedApproval{ticket: t, st: st, status: status}, true, nil
			}
		}
		for _, d := range st.Turn.Approvals {
			if approvalToken(owner, info.ThreadID, state.Approval{ID: d.ID, Created: d.Asked}) == tok {
				t.ApprovalID, t.state = d.ID, tokenDone
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
func (s *Server) claimStored(ctx context.Context, c caller, tok string) (approvalTicket, claimResult, error) {
	sa, ok, err := s.resolveStoredToken(ctx, c, tok)
	if err != nil || !ok {
		return approvalTicket{}, claimNone, err
	}
	if sa.answered != nil {
		sa.ticket.reply = answeredReply(tok, *sa.answered, sa.st, sa.status)
		return sa.ticket, claimReplay, nil
	}
	if sa.between {
		// Not a new question: starting a turn with "yes AP-…" once
		// the resume ends would answer nothing. Let the client retry.
		return sa.ticket, claimBusy, nil
	}
	if !sa.ticket.Expires.IsZero() && s.cfg.Now().After(sa.ticket.Expires) {
		return approvalTicket{}, claimNone, nil
	}
	t, res := s.approvals.adopt(sa.ticket)
	return t, res, nil
}

// answeredReply is the reply to a repeated answer of an approval another
// process (or an earlier life of this one) carried out: the agent carried
// it out once, and this says what became of it.
func answeredReply(tok string, d state.ApprovalDecision, st state.State, status agent.RunStatus) chatReply {
	verdict := "rejected"
	if d.Approved {
		verdict = "approved"
	}
	text := fmt.Sprintf("Approval %s was already answered (%s); it is carried out once.", tok, verdict)
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
	return chatReply{Content: text}
}

// stillPending reports whether the thread still waits for the approval the
// token answers: a run that failed before taking the answer left it so.
func (s *Server) stillPending(ctx context.Context, thread, token string) bool {
	id, ok := s.approvals.approvalOf(token)
	if !ok {
		return false
	}
	ctx = context.WithoutCancel(ctx)
	if pl, ok := s.cfg.Runner.(pendingLister); ok {
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
