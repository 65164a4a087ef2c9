package server

import "testing"

// A negative StreamWriteTimeout is valid: the stream frames get no write
// deadline (server/internal/sse: TestFramesHaveWriteDeadlines).
func TestNegativeStreamWriteTimeoutIsValid(t *testing.T) {
	if _, err := New(Config{Runner: newScriptedRunner(), Limits: Limits{StreamWriteTimeout: -1}}); err != nil {
		t.Fatalf("a negative StreamWriteTimeout (none) is valid: %v", err)
	}
}
