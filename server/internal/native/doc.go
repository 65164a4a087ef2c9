// Package native is the native API's wire format (docs/api.md): the
// requests that create a thread, start a run and answer an approval, the
// thread's state, a run as JSON, a page of a list, and when a request
// asks for the event stream. The routes' handlers, which open and follow
// runs, are the server's (server/native.go).
package native
