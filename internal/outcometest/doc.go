// Package outcometest is a small test application whose one side-effecting
// capability ends each way a change can end: confirmed (the readback
// matches), failed (known not applied), mismatch (the readback differs),
// unconfirmed (the call broke off and nothing can read the target back)
// and refused (a value beyond the target's limits, refused without asking
// a human); with its Planner, a scripted model that answers a question
// with a write, unrequested too. The frontends' tests (the page, /v1, the terminal, /metrics)
// drive it through a real agent to show every outcome; it is no mock of
// the framework, only of a machine.
package outcometest
