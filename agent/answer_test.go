package agent_test

import (
	"testing"

	"github.com/capgraph/capgraph/agent"
)

func TestParseYesNo(t *testing.T) {
	type want struct{ yes, no bool }
	for text, w := range map[string]want{
		// The reference's fast-path words, with case, spaces and trailing punctuation.
		"yes": {true, false}, "Y": {true, false}, "yep": {true, false}, "Yeah!": {true, false}, " OK ": {true, false}, "okay?": {false, false},
		"no": {false, true}, "N.": {false, true}, "nope": {false, true}, "nah!!": {false, true}, "Cancel": {false, true},
		// Our own words.
		"Yes.": {true, false}, "approve": {true, false}, "go  ahead": {true, false}, "retry": {true, false},
		"reject": {false, true}, "give up": {false, true}, "don't": {false, true},
		// German and French, with their typographic variants.
		"Ja": {true, false}, "genehmigt.": {true, false}, "Einverstanden": {true, false}, "ja, bitte": {true, false}, "Bestätigt": {true, false},
		"oui": {true, false}, "OUI !": {true, false}, "d'accord": {true, false}, "D’accord.": {true, false}, "approuvé": {true, false},
		"approuvé": {true, false}, "Vas-y": {true, false}, "yes , retry": {true, false},
		"nein": {false, true}, "Abbrechen!": {false, true}, "non": {false, true}, "non merci": {false, true}, "annuler": {false, true},
		// Unclear: neither, so not an approval (and not a decision).
		"": {false, false}, "maybe": {false, false}, "yes but only tomorrow": {false, false}, "yes no": {false, false},
		"not yet": {false, false}, "yes AP-7F3K": {false, false},
		// What an attacker or a hesitant operator types: questions, quotes,
		// hesitation, negation, look-alike letters, markup.
		"ok?": {false, false}, "yes?": {false, false}, "ja?": {false, false}, "yes...": {false, false}, "yes…": {false, false},
		`"yes"`: {false, false}, "'yes'": {false, false}, "«oui»": {false, false}, "**yes**": {false, false}, "`yes`": {false, false},
		"not yes": {false, false}, "hmm yes maybe": {false, false}, "yes but": {false, false}, "yes, but not now": {false, false},
		"ɐ yes": {false, false}, "ｙｅｓ": {false, false}, "уes": {false, false}, "yes\u200b": {false, false}, "y e s": {false, false},
		"no?": {false, false}, "no yes": {false, false}, "yes!?": {false, false}, "nicht genehmigt": {false, false}, "pas d'accord": {false, false},
		"hmm, what would that do to the beam?": {false, false},
	} {
		if got := agent.ParseYes(text); got != w.yes {
			t.Errorf("ParseYes(%q) = %v, want %v", text, got, w.yes)
		}
		if got := agent.ParseNo(text); got != w.no {
			t.Errorf("ParseNo(%q) = %v, want %v", text, got, w.no)
		}
	}
}
