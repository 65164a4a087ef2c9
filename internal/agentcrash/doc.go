// Package agentcrash holds the kill -9 test of the agent: the test binary
// re-executes itself as a child that runs agent turns (concurrent steps, a
// durable retry wait, a step that needs a human's approval) on a SQLite
// checkpoint store; the parent SIGKILLs it at random moments, answers the
// approvals between restarts, and restarts it, and each child first resumes
// the cut runs with (*agent.Agent).RecoverRuns. The parent then checks that
// every turn finished with its one message, that no checkpoint the child
// acknowledged was lost, and that no completed step took effect again. The
// package has no non-test code.
package agentcrash
