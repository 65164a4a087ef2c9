package turns

import (
	"context"
	"net/http"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/runs"
	"github.com/capgraph/capgraph/state"
)

// Turns is what every protocol's handler needs of the server: a request
// opened into a run the same way on every protocol, threads, approvals,
// the runs to follow, and the errors answered. The caller is the
// request's (its context's): a protocol never sees who it is.
type Turns interface {
	// Open turns o's request into a run; false when the request has been
	// answered (with the error that refused it).
	Open(o Opening) (Opened, bool)
	// OpenTurn checks a new turn and returns the agent's request for it:
	// a 400 naming o.Field for a message over the limit, the agent's
	// refusal (403 for a loosening option) otherwise.
	OpenTurn(ctx context.Context, o TurnOpening) (agent.TurnRequest, error)
	// InternalThread is the internal id of the caller's thread id.
	InternalThread(ctx context.Context, id string) string
	// OpenThread returns the caller's thread id, created when new
	// (source names the protocol in its metadata).
	OpenThread(ctx context.Context, id, source string) (Thread, error)
	// CheckPending makes sure the thread waits for the approval id, so a
	// repeated answer cannot resume (and execute) twice.
	CheckPending(ctx context.Context, th Thread, id string) error
	// Who names the caller as an approval's answer says who answered.
	Who(ctx context.Context) string
	// RunByID returns a run of this process, finished or not.
	RunByID(id string) (Run, bool)
	// ThreadState reads an internal thread's state (the agent's).
	ThreadState(ctx context.Context, thread string) (state.State, error)
	// WaitingApproval is the approval the internal thread waits for: nil
	// when it waits for none (or its state cannot be read).
	WaitingApproval(ctx context.Context, thread string) *state.Approval
	// Start records and starts the run o asks for, for a protocol whose
	// requests carry no HTTP headers of their own (MCP): o.Key, the
	// client's key in the request, makes it idempotent. A repeat (the
	// same key and request) starts nothing: it gets the run its key
	// started (Opened.Dup), and that run to follow while it goes on, here
	// or on another replica (Opened.Run); a key first sent with another
	// request is refused (apierror.ErrKeyReused).
	Start(ctx context.Context, o Once) (Opened, error)
	// Threads is the caller's threads with their status, newest first:
	// the first page (Config.MaxPageSize).
	Threads(ctx context.Context) ([]ThreadSummary, error)
	// WriteError answers err in the OpenAI error shape, with a message
	// meant for the client; PublicMessage is that message.
	WriteError(w http.ResponseWriter, err error)
	PublicMessage(err error) string
}

// Run is a run a protocol follows.
type Run interface {
	// Join counts a request that cancels the run when it leaves (Leave).
	Join()
	Leave(repeatable bool)
	// Result is how the run ended: its status, its error, and whether
	// the server's shutdown stopped it.
	Result() (agent.RunStatus, error, bool)
	// Follow hands the run's events after seq after to fn until the run
	// finishes (true) or ctx ends (false), beat every heartbeat while
	// waiting (runs.Run.Follow).
	Follow(ctx context.Context, after int, heartbeat time.Duration, b runs.Batcher, fn func(agent.Event), beat func()) bool
}

// Thread is a caller's thread: the client's id and the internal one.
type Thread struct {
	ID, Internal string
}

// ThreadSummary is a thread as a list shows it: its client id, its
// status (its last run's, "" before any) and when it last changed.
type ThreadSummary struct {
	ID, Status string
	Updated    time.Time
}

// TurnOpening is what a protocol read from its request for a new turn.
type TurnOpening struct {
	// Field names the request field the message came in, for the client.
	Field string
	// Input is the message; Options the turn options asked for.
	Input   string
	Options *agent.TurnOptions
	// Source names the protocol in the thread's metadata; ClientThread
	// and Thread are the client's and the internal thread ids.
	Source, ClientThread, Thread string
	// ClientMeta is the metadata the client gave the thread; ExtraMeta is
	// the protocol's own, stored beside it.
	ClientMeta, ExtraMeta map[string]string
	// Allowed, when not nil, narrows the key's allowed capabilities (a
	// trigger's list); By, when set, names who asks instead of the key.
	// Both are the server's own: Turns.OpenTurn drops a protocol's.
	Allowed []string
	By      string
}

// Spec is the run a protocol asks for: a turn, or an approval's answer.
type Spec struct {
	Source, ClientThread, Thread string
	Turn                         *agent.TurnRequest
	Answer                       *agent.Answer
	// Beside are the approvals pending beside Answer's (answered by
	// other requests while its run goes on).
	Beside []string
}

// Once is a run a protocol asks for through Turns.Start.
type Once struct {
	// Scope names the protocol the key is good for.
	Scope string
	// Key is the client's key of the request ("" none; at most MaxKeyLen
	// bytes): for as long as its run's record is kept, a repeat with the
	// same key is answered by that run instead of starting another.
	Key string
	// Request is what the request asks, as the client sent it (before
	// anything is opened): a key sent again with another request is
	// refused.
	Request []string
	// Spec opens what the run needs (the thread, the turn or the
	// approval's answer) and returns it; it is not called for a repeat.
	Spec func(ctx context.Context) (Spec, error)
}

// MaxKeyLen is the longest idempotency key a client may send (the
// Idempotency-Key header's limit too).
const MaxKeyLen = 255

// Opening is how a request becomes a run (the server's open): the
// Idempotency-Key checked and the run's key made, what the protocol opens
// for the run (Spec: nil and no error when the protocol answers without a
// run), the run recorded and started, and a run the key started first
// checked to come from the same request.
type Opening struct {
	W http.ResponseWriter
	R *http.Request
	// Scope names the protocol (and thread) the key is good for.
	Scope string
	// LookFirst, when set, is what the request asks, known before
	// anything is opened: a repeat (the same key) is answered by the run
	// its key started first (Opened.Dup), checked to come from the same
	// request, before Spec runs.
	LookFirst *Spec
	Spec      func(ctx context.Context, key string) (*Spec, error)
	// Failed, when set, may answer the refusal of the run itself (true);
	// otherwise the refusal is written as the error it is.
	Failed func(err error) bool
}

// Opened is what an opening came to: the run it started (Run), or the
// record of the run a request with the same key started before (Dup), or
// neither when the protocol answers without a run.
type Opened struct {
	Run Run
	Dup *runstore.Record
	// DupThread is the client's id of Dup's thread.
	DupThread string
}
