package approvaltoken

import (
	"testing"
	"time"

	"github.com/capgraph/capgraph/server/internal/chatanswer"
)

func TestApprovalStore(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	a := NewStore()
	tok := a.Issue(Ticket{Owner: "alice", Thread: "th", ApprovalID: "ap", Expires: now.Add(time.Minute)}, now)
	if _, ok := Find("… Approval ID: " + tok + " — reply"); !ok {
		t.Fatalf("token %q not found by the pattern", tok)
	}
	steps := []struct {
		owner string
		at    time.Time
		want  ClaimResult
		reply *chatanswer.Reply
	}{
		{"bob", now, ClaimNone, nil},   // another principal
		{"alice", now, ClaimOK, nil},   // first claim
		{"alice", now, ClaimBusy, nil}, // while resuming
		{"alice", now, ClaimBusy, &chatanswer.Reply{Content: "done"}},
		{"alice", now, ClaimReplay, nil}, // after: replay
	}
	for i, st := range steps {
		_, got := a.Claim(st.owner, tok, st.at)
		if got != st.want {
			t.Fatalf("step %d: %v, want %v", i, got, st.want)
		}
		if st.reply != nil {
			a.Settle(tok, st.reply)
		}
	}
	// A failed start puts the ticket back to pending.
	tok2 := a.Issue(Ticket{Owner: "alice", Expires: now.Add(time.Minute)}, now)
	a.Claim("alice", tok2, now)
	a.Settle(tok2, nil)
	if _, got := a.Claim("alice", tok2, now); got != ClaimOK {
		t.Fatalf("after release: %v", got)
	}
	// Expired tickets are refused and swept.
	tok3 := a.Issue(Ticket{Owner: "alice", Expires: now.Add(time.Minute)}, now)
	if _, got := a.Claim("alice", tok3, now.Add(2*time.Minute)); got != ClaimNone {
		t.Fatalf("expired: %v", got)
	}
	for range sweepAbove + 1 {
		a.Issue(Ticket{Owner: "x", Expires: now.Add(time.Minute)}, now)
	}
	a.Issue(Ticket{Owner: "x", Expires: now.Add(time.Hour)}, now.Add(2*time.Minute))
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
		if got := AnswerText(tc.in, tok); got != tc.want {
			t.Errorf("AnswerText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
