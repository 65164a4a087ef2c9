package server

import (
	"crypto/rand"
	"encoding/base32"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Chat Completions is stateless: the client sends the whole history each
// time. An approval request therefore carries a short token in the
// assistant message; the next request finds it in the last assistant
// message and resumes the interrupted thread. A token is bound to the
// principal that received it and is used once. This in-memory store only
// serves this process's own tokens quickly and replays their exact
// replies; any process resolves a token through the checkpoint store
// (approvaltoken.go).

var approvalTokenRE = regexp.MustCompile(`\bAP-[A-Z2-7]{8}\b`)

// findApprovalToken returns the last approval token in text.
func findApprovalToken(text string) (string, bool) {
	all := approvalTokenRE.FindAllString(text, -1)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// answerText is the user's answer without the approval token they may have
// repeated ("yes AP-7F3KQ2ZD" → "yes", also in lower case), so the agent
// reads a clear yes/no. The token is ASCII; it is matched byte by byte with
// ASCII case folding on the input itself, never through a case-mapped copy
// (whose byte offsets differ for text like "ɐ", which upper-cases to a
// longer sequence). An ASCII byte never occurs inside a multi-byte UTF-8
// sequence, so cutting at a match keeps the rest of the input intact.
func answerText(input, token string) string {
	var b strings.Builder
	for i := 0; i < len(input); {
		if i+len(token) <= len(input) && asciiEqualFold(input[i:i+len(token)], token) {
			b.WriteByte(' ')
			i += len(token)
			continue
		}
		b.WriteByte(input[i])
		i++
	}
	return strings.Trim(strings.Join(strings.Fields(b.String()), " "), " ,;:-–—.!?")
}

// asciiEqualFold compares s with the ASCII string t, folding ASCII letters
// only (strings.EqualFold would also match "K" with the Kelvin sign).
func asciiEqualFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if 'a' <= a && a <= 'z' {
			a -= 'a' - 'A'
		}
		if 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func newApprovalToken() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "AP-" + base32.StdEncoding.EncodeToString(b[:])
}

type tokenState int

const (
	tokenPending tokenState = iota
	tokenResuming
	tokenDone
)

// approvalTicket is a pending approval as Chat Completions sees it.
type approvalTicket struct {
	Token        string
	Owner        string // ownerKey of the principal it was issued to
	Thread       string // internal thread id
	ClientThread string
	ApprovalID   string
	Expires      time.Time

	state tokenState
	reply chatReply // the resumed run's reply, replayed to a repeated request
}

// chatReply is what a finished Chat Completions turn said.
type chatReply struct {
	Content   string
	Reasoning string
}

type claimResult int

const (
	claimNone   claimResult = iota // unknown, expired or another principal's token
	claimOK                        // the caller may resume; the ticket is now resuming
	claimBusy                      // a resume with this token is running
	claimReplay                    // already resumed: replay its reply
)

type approvalStore struct {
	mu sync.Mutex
	m  map[string]*approvalTicket
}

func newApprovalStore() *approvalStore { return &approvalStore{m: map[string]*approvalTicket{}} }

// sweepAbove is the store size above which issue drops expired tickets.
const sweepAbove = 1024

func (a *approvalStore) issue(t approvalTicket, now time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) > sweepAbove {
		for tok, old := range a.m {
			// A done ticket is kept for replays until it expires too.
			if !old.Expires.IsZero() && now.After(old.Expires) && old.state != tokenResuming {
				delete(a.m, tok)
			}
		}
	}
	if t.Token == "" {
		t.Token = newApprovalToken()
		for a.m[t.Token] != nil {
			t.Token = newApprovalToken()
		}
	}
	if old, ok := a.m[t.Token]; ok && old.state != tokenPending {
		// The same approval asked again (a derived token, approvaltoken.go)
		// keeps its answer.
		return t.Token
	}
	a.m[t.Token] = &t
	return t.Token
}

// adopt registers a ticket resolved through the checkpoint store
// (approvaltoken.go) as claimed by the caller, unless this process knows
// the token already: then the answer is what claim says.
func (a *approvalStore) adopt(t approvalTicket) (approvalTicket, claimResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.m[t.Token]; ok && old.Owner == t.Owner && old.state != tokenPending {
		if old.state == tokenResuming {
			return *old, claimBusy
		}
		return *old, claimReplay
	}
	t.state = tokenResuming
	a.m[t.Token] = &t
	return t, claimOK
}

// claim decides what a request carrying token may do. Tokens of other
// principals look exactly like unknown ones.
func (a *approvalStore) claim(owner, token string, now time.Time) (approvalTicket, claimResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.m[token]
	if !ok || t.Owner != owner {
		return approvalTicket{}, claimNone
	}
	switch t.state {
	case tokenResuming:
		return *t, claimBusy
	case tokenDone:
		return *t, claimReplay
	}
	if !t.Expires.IsZero() && now.After(t.Expires) {
		delete(a.m, token)
		return approvalTicket{}, claimNone
	}
	t.state = tokenResuming
	return *t, claimOK
}

// approvalOf returns the approval id a token of this process stands for.
func (a *approvalStore) approvalOf(token string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.m[token]
	if !ok {
		return "", false
	}
	return t.ApprovalID, true
}

// releaseOnPanic, deferred by a request that claimed token, puts the token
// back to pending when the request panics, then lets the panic go on.
func (a *approvalStore) releaseOnPanic(token string) {
	if v := recover(); v != nil {
		a.settle(token, nil)
		panic(v)
	}
}

// settle records the outcome of a claimed token: done with a reply, or back
// to pending when the resume could not start.
func (a *approvalStore) settle(token string, reply *chatReply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.m[token]
	if !ok {
		return
	}
	if reply == nil {
		t.state = tokenPending
		return
	}
	t.state, t.reply = tokenDone, *reply
}
