package agent_test

import (
	"testing"

	"github.com/capgraph/capgraph/agent"
)

func TestParseYes(t *testing.T) {
	for text, want := range map[string]bool{
		"yes": true, "Yes.": true, " OK ": true, "approve": true, "go ahead": true, "retry": true,
		"no": false, "": false, "maybe": false, "yes but only tomorrow": false, "don't": false, "nope": false,
	} {
		if got := agent.ParseYes(text); got != want {
			t.Errorf("ParseYes(%q) = %v, want %v", text, got, want)
		}
	}
}
