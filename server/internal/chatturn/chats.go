package chatturn

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// Chats is what a chat protocol's handler needs of the server beside its
// wire format: a chat turn opened into a run (or answered without one:
// an approval answered before, a repeat of a request), and the end of
// the run's answer (the approval token settled or issued, the transcript
// remembered). The caller is the request's (its context's).
type Chats interface {
	// StatusFrames reports whether the answer to r carries Open WebUI
	// status frames (user is the request's "user" field).
	StatusFrames(r *http.Request, user json.RawMessage) bool
	// Open opens t as protocol p's; false when the request has been
	// answered.
	Open(w http.ResponseWriter, r *http.Request, t Turn, p Protocol) (Opened, bool)
	// Owner is the caller's key of what it owns (its responses).
	Owner(ctx context.Context) string
	// FindThread finds the caller's thread id (false: it has none).
	FindThread(ctx context.Context, id string) (turns.Thread, bool, error)
	// PendingToken is the approval token of the newest approval the
	// internal thread waits for, or "".
	PendingToken(ctx context.Context, thread string) (string, error)
	// End is how a followed run ended: left when the client went away
	// (nothing more is sent), else replay (what an approval's answer
	// became, to send instead) or the run's error. token is the approval
	// the run answers ("").
	End(r *http.Request, ru Run, followed bool, token string) (left bool, replay *chatanswer.Reply, runErr error)
	// Finish is the text that ends the answer: the turn's artifacts and,
	// when the run waits for approval, the token it issues.
	Finish(r *http.Request, ru Run, rd *chatanswer.Renderer) string
	// Settle records what a claimed token's run answered (nil: the token
	// is pending again).
	Settle(token string, reply *chatanswer.Reply)
	// ReleaseOnPanic, deferred, gives a claimed token back when the
	// handler panics, and lets the panic go on.
	ReleaseOnPanic(token string)
	// Remember makes the conversation with its answer name the run's
	// thread.
	Remember(r *http.Request, t Turn, ru Run, answer string)
	// Delivered tells that the answer reached the client.
	Delivered(ru Run)
	// WriteError answers err in the OpenAI error shape; PublicMessage is
	// its message for the client.
	WriteError(w http.ResponseWriter, err error)
	PublicMessage(err error) string
}

// Protocol is a chat protocol: how its turns are keyed, named in a
// thread's metadata, and answered when repeated.
type Protocol int

const (
	// ChatCompletions: a repeat of a failed run gets its failure again.
	ChatCompletions Protocol = iota
	// Responses: a repeat of a failed run starts a new one.
	Responses
)

// Run is a chat turn's run.
type Run interface {
	turns.Run
	// Identity is the run's id and when it started (its answer's
	// identity).
	Identity() (id string, started time.Time)
}

// Opened is what opening a chat turn came to: a run to follow (Run, a
// new one answering the approval Token when set, or the run of a
// repeated request's first), or the whole answer (Reply) to send without
// one.
type Opened struct {
	Run   Run
	Token string
	Reply *chatanswer.Reply
	// ClientThread is the thread's client id.
	ClientThread string
	// RunID and RunStarted, when set, are those of the run whose answer
	// Reply repeats, with its Usage; Delivered, when set, is told once
	// that answer reached the client.
	RunID      string
	RunStarted time.Time
	Usage      agent.Usage
	Delivered  func()
}

// EndNote is the note an answer ends with for how ru ended (valid once
// finished): chatanswer.EndNote of its result.
func EndNote(ru Run) string {
	status, _, shutdown := ru.Result()
	return chatanswer.EndNote(status, shutdown)
}
