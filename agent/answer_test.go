package agent_test

import (
	"testing"

	"github.com/capgraph/capgraph/agent"
)

func TestParseYesNo(t *testing.T) {
	type want struct{ yes, no bool }
	for text, w := range map[string]want{
		// The reference's fast-path words, with case, spaces and trailing punctuation.
		"yes": {true, false}, "Y": {true, false}, "yep": {true, false}, "Yeah!": {true, false}, " OK ": {true, false}, "okay?": {true, false},
		"no": {false, true}, "N.": {false, true}, "nope": {false, true}, "nah!!": {false, true}, "Cancel": {false, true},
		// Our own words.
		"Yes.": {true, false}, "approve": {true, false}, "go  ahead": {true, false}, "retry": {true, false},
		"reject": {false, true}, "give up": {false, true}, "don't": {false, true},
		// Unclear: neither, so not an approval.
		"": {false, false}, "maybe": {false, false}, "yes but only tomorrow": {false, false}, "yes no": {false, false},
		"not yet": {false, false}, "yes AP-7F3K": {false, false},
	} {
		if got := agent.ParseYes(text); got != w.yes {
			t.Errorf("ParseYes(%q) = %v, want %v", text, got, w.yes)
		}
		if got := agent.ParseNo(text); got != w.no {
			t.Errorf("ParseNo(%q) = %v, want %v", text, got, w.no)
		}
	}
}
