// Package native is the native API (docs/api.md): threads (create, list,
// get, PATCH their metadata, delete, their changes' outcomes), a thread's
// state and plan, its runs (start, get, list, follow the events, cancel),
// the answer to an approval (now, or queued beside an answer being
// carried out), and time travel (history, fork, replay, compare, the
// targets). Its handlers read and check what a client sends and write
// what the client reads; they reach the server only through turns.Turns
// and this package's Threads, Runs, Approvals and TimeTravel, with the
// event stream Streams writes.
package native
