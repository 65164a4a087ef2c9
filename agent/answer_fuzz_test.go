package agent_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
)

// FuzzParseAnswer: reading a human's answer never panics, is never both a
// yes and a no, and does not depend on surrounding space or letter case.
// The seed corpus is in testdata/fuzz/FuzzParseAnswer.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"yes", "ɐ yes", "Yes!", "no.", "İ", "ſure", "go ahead", "don't", "\xff yes", "YES\u00a0", "y e s",
		"ok?", "yes...", "d’accord", "approuve\u0301", "ja, bitte", "Non merci !", "yes , retry", ",", "!", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		yes, no := agent.ParseYes(s), agent.ParseNo(s)
		if yes && no {
			t.Fatalf("%q reads as both yes and no", s)
		}
		if agent.ParseYes(" "+s+"  ") != yes || agent.ParseNo("\t"+s+"\n") != no {
			t.Fatalf("%q: surrounding space changes the reading", s)
		}
		if yes && !agent.ParseYes(strings.ToUpper(s)) && strings.EqualFold(s, strings.ToLower(s)) {
			t.Fatalf("%q: upper case changes the reading", s)
		}
	})
}
