// Package killtest is the harness the kill -9 tests share (internal/crashtest,
// internal/agentcrash, internal/servercrash, internal/answercrash): the parent re-executes the test binary as a child with
// an environment, reads the child's stdout line by line, SIGKILLs it at a
// random moment (now and then soon after start, otherwise soon after the first
// trigger line) and reports whether the kill landed; the child prints whole
// lines with a Sayer and the parent reads them into a Report (ACK, DONE and
// pending "KIND thread" lines). It also checks that acknowledged checkpoints
// survived.
// Only tests import it.
package killtest
