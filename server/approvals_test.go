package server

import (
	"testing"
	"time"
)

func TestApprovalStore(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := newApprovalStore()
	tok := a.issue(approvalTicket{Owner: "alice", Thread: "th", ApprovalID: "ap", Expires: now.Add(time.Minute)}, now)
	if _, ok := findApprovalToken("… Approval ID: " + tok + " — reply"); !ok {
		t.Fatalf("token %q not found by the pattern", tok)
	}
	steps := []struct {
		owner string
		at    time.Time
		want  claimResult
		reply *chatReply
	}{
		{"bob", now, claimNone, nil},   // another principal
		{"alice", now, claimOK, nil},   // first claim
		{"alice", now, claimBusy, nil}, // while resuming
		{"alice", now, claimBusy, &chatReply{Content: "done"}},
		{"alice", now, claimReplay, nil}, // after: replay
	}
	for i, st := range steps {
		_, got := a.claim(st.owner, tok, st.at)
		if got != st.want {
			t.Fatalf("step %d: %v, want %v", i, got, st.want)
		}
		if st.reply != nil {
			a.settle(tok, st.reply)
		}
	}
	// A failed start puts the ticket back to pending.
	tok2 := a.issue(approvalTicket{Owner: "alice", Expires: now.Add(time.Minute)}, now)
	a.claim("alice", tok2, now)
	a.settle(tok2, nil)
	if _, got := a.claim("alice", tok2, now); got != claimOK {
		t.Fatalf("after release: %v", got)
	}
	// Expired tickets are refused and swept.
	tok3 := a.issue(approvalTicket{Owner: "alice", Expires: now.Add(time.Minute)}, now)
	if _, got := a.claim("alice", tok3, now.Add(2*time.Minute)); got != claimNone {
		t.Fatalf("expired: %v", got)
	}
	for range sweepAbove + 1 {
		a.issue(approvalTicket{Owner: "x", Expires: now.Add(time.Minute)}, now)
	}
	a.issue(approvalTicket{Owner: "x", Expires: now.Add(time.Hour)}, now.Add(2*time.Minute))
	if n := len(a.m); n > 10 {
		t.Fatalf("%d tickets after the sweep", n)
	}
}

func TestAnswerText(t *testing.T) {
	const tok = "AP-7F3KQ2ZD"
	tests := []struct{ in, want string }{
		{"yes", "yes"},
		{"yes " + tok, "yes"},
		{"Yes, " + tok + "!", "Yes"},
		{tok + " yes", "yes"},
		{"yes, ap-7f3kq2zd", "yes"},
		{"  no   " + tok + "  ", "no"},
		{"what is " + tok + "?", "what is"},
		{"go ahead", "go ahead"},
	}
	for _, tc := range tests {
		if got := answerText(tc.in, tok); got != tc.want {
			t.Errorf("answerText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
