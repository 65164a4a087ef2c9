// Package servercrash kills a capgraph server (a child process serving the
// real agent on SQLite, as `capgraph serve` does) with SIGKILL while more
// than a hundred clients stream runs from it, starts a server again on the
// same file, and checks that every input the server acknowledged — a 2xx
// status line or a stream's first byte — is answered, or its run marked
// failed with a reason a client can read: none is lost. The harness is
// internal/killtest. Only tests are in it.
package servercrash
