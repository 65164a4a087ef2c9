// Package turns is what the protocols' handlers (package agui, …) share of
// the server: the Turns interface through which a request opens a run the
// same way on every protocol, finds threads, checks an approval and
// follows a run, and the rules every protocol applies to what a client
// sends (thread ids, a repeatable request, the replay header). The server
// implements Turns; a protocol package knows nothing else of it.
package turns
