// Package native is the native API's wire format (docs/api.md): the
// requests that create a thread, start a run and answer an approval, the
// thread's state, a run as JSON, a page of a list, and when a request
// asks for the event stream; and the routes of a thread's state and plan
// (Routes), which reach the server only through Threads. The other
// routes' handlers, which open and follow runs, are still the server's
// (server/native.go).
package native
