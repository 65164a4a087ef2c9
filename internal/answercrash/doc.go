// Package answercrash kills a capgraph server (a child process serving the
// real agent on SQLite, as `capgraph serve` does) with SIGKILL while humans
// answer approvals: forty threads wait for the approval of a write, forty
// answers arrive at once over the native API, Chat Completions (the
// approval token) and Responses (previous_response_id), and the kill lands
// after a random number of them were acknowledged. A server started again
// on the same file recovers, and the test checks that no acknowledged
// answer was lost, that no human was asked a second time, and that every
// approved write happened exactly once (a journal the write capability
// appends to). Only tests are in it.
package answercrash
