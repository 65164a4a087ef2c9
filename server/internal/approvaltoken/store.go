package approvaltoken

import (
	"crypto/rand"
	"encoding/base32"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/server/internal/chatanswer"
)

// Chat Completions is stateless: the client sends the whole history each
// time. An approval request therefore carries a short token in the
// assistant message; the next request finds it in the last assistant
// message and resumes the interrupted thread. A token is bound to the
// principal that received it and is used once. This in-memory store only
// serves this process's own tokens quickly and replays their exact
// replies; any process resolves a token through the checkpoint store
// (server/approvaltoken.go).

var approvalTokenRE = regexp.MustCompile(`\bAP-[A-Z2-7]{8}\b`)

// Find returns the last approval token in text.
func Find(text string) (string, bool) {
	all := approvalTokenRE.FindAllString(text, -1)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// AnswerText is the user's answer without the approval token they may have
// repeated ("yes AP-7F3KQ2ZD" → "yes", also in lower case), so the agent
// reads a clear yes/no. The token is ASCII; it is matched byte by byte with
// ASCII case folding on the input itself, never through a case-mapped copy
// (whose byte offsets differ for text like "ɐ", which upper-cases to a
// longer sequence). An ASCII byte never occurs inside a multi-byte UTF-8
// sequence, so cutting at a match keeps the rest of the input intact.
func AnswerText(input, token string) string {
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

// New makes a random token.
func New() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "AP-" + base32.StdEncoding.EncodeToString(b[:])
}

// State is where a ticket is: pending an answer, being answered (a run
// resumes the thread with it), or done.
type State int

const (
	Pending State = iota
	Resuming
	Done
)

// Ticket is a pending approval as Chat Completions sees it.
type Ticket struct {
	Token        string
	Owner        string // ownerKey of the principal it was issued to
	Thread       string // internal thread id
	ClientThread string
	ApprovalID   string
	Expires      time.Time

	State State
	Reply chatanswer.Reply // the resumed run's reply, replayed to a repeated request
}

// ClaimResult is what a request carrying a token may do.
type ClaimResult int

const (
	ClaimNone   ClaimResult = iota // unknown, expired or another principal's token
	ClaimOK                        // the caller may resume; the ticket is now resuming
	ClaimBusy                      // a resume with this token is running
	ClaimReplay                    // already resumed: replay its reply
)

// Store holds this process's tickets by token.
type Store struct {
	mu sync.Mutex
	m  map[string]*Ticket
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{m: map[string]*Ticket{}} }

// sweepAbove is the store size above which issue drops expired tickets.
const sweepAbove = 1024

// Issue keeps t, its token made when it has none, and returns the token;
// expired tickets are swept once the store holds sweepAbove.
func (a *Store) Issue(t Ticket, now time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) > sweepAbove {
		for tok, old := range a.m {
			// A done ticket is kept for replays until it expires too.
			if !old.Expires.IsZero() && now.After(old.Expires) && old.State != Resuming {
				delete(a.m, tok)
			}
		}
	}
	if t.Token == "" {
		t.Token = New()
		for a.m[t.Token] != nil {
			t.Token = New()
		}
	}
	if old, ok := a.m[t.Token]; ok && old.State != Pending {
		// The same approval asked again (a derived token, server/approvaltoken.go)
		// keeps its answer.
		return t.Token
	}
	a.m[t.Token] = &t
	return t.Token
}

// Adopt registers a ticket resolved through the checkpoint store
// (server/approvaltoken.go) as claimed by the caller, unless this process knows
// the token already: then the answer is what claim says.
func (a *Store) Adopt(t Ticket) (Ticket, ClaimResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.m[t.Token]; ok && old.Owner == t.Owner && old.State != Pending {
		if old.State == Resuming {
			return *old, ClaimBusy
		}
		return *old, ClaimReplay
	}
	t.State = Resuming
	a.m[t.Token] = &t
	return t, ClaimOK
}

// Claim decides what a request carrying token may do. Tokens of other
// principals look exactly like unknown ones.
func (a *Store) Claim(owner, token string, now time.Time) (Ticket, ClaimResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.m[token]
	if !ok || t.Owner != owner {
		return Ticket{}, ClaimNone
	}
	switch t.State {
	case Resuming:
		return *t, ClaimBusy
	case Done:
		return *t, ClaimReplay
	}
	if !t.Expires.IsZero() && now.After(t.Expires) {
		delete(a.m, token)
		return Ticket{}, ClaimNone
	}
	t.State = Resuming
	return *t, ClaimOK
}

// ApprovalOf returns the approval id a token of this process stands for.
func (a *Store) ApprovalOf(token string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.m[token]
	if !ok {
		return "", false
	}
	return t.ApprovalID, true
}

// ReleaseOnPanic, deferred by a request that claimed token, puts the token
// back to pending when the request panics, then lets the panic go on.
func (a *Store) ReleaseOnPanic(token string) {
	if v := recover(); v != nil {
		a.Settle(token, nil)
		panic(v)
	}
}

// Settle records the outcome of a claimed token: done with a reply, or back
// to pending when the resume could not start.
func (a *Store) Settle(token string, reply *chatanswer.Reply) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.m[token]
	if !ok {
		return
	}
	if reply == nil {
		t.State = Pending
		return
	}
	t.State, t.Reply = Done, *reply
}

// Contains reports whether text holds an approval token.
func Contains(text string) bool { return approvalTokenRE.MatchString(text) }
