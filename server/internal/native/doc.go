// Package native is the native API's wire format (docs/api.md): the
// requests that create a thread, start a run and answer an approval, the
// thread's state, a run as JSON, a page of a list, and when a request
// asks for the event stream; and the routes of a thread's state and plan
// and of its runs (start, get, list, follow the events, cancel), which
// reach the server only through turns.Turns, Threads and Runs, with the event stream Streams
// writes (the server's start and approval routes use it too). The other
// routes' handlers, which open and follow runs, are still the server's
// (server/native.go).
package native
