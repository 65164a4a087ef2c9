package intent

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// filteredPatterns are the rules' patterns tried behind the strings their
// matches need.
var filteredPatterns = map[string]filtered{
	"hypothetical": hypotheticalPattern, "read only": readOnlyPattern, "history": historyPattern,
	"later": laterPattern, "restore verbs": restoreVerbs, "restore values": restoreValues,
}

// The filter never turns a match away: on texts made of the very strings
// the patterns need, cut and joined at random with the words operators
// use, a filtered pattern matches exactly where its regexp does. Each
// pattern's filter is also worth having: it needs strings at all.
func TestFilterAgreesWithItsPattern(t *testing.T) {
	words := strings.Fields(`set the q1 current to 105 a and check orbit what is would will if i we you how do can could ` +
		`should it be safe ok to was were got changed raised 10 minutes ago since yesterday last shift over past tomorrow ` +
		`later at 14:30 undo restore back value old previous wert von gestern valeur précédente wäre würde wenn ich si je ` +
		`est-il possible comment on — , . ? ! "quoted" 'single' read-only dry run never mind`)
	for name, f := range filteredPatterns {
		if len(f.need) == 0 {
			t.Errorf("%s: no strings needed worked out; the filter does nothing", name)
		}
		words = append(words, f.need...)
		for _, n := range f.need { // the needed strings cut short, to come near without holding them
			if len(n) > 2 {
				words = append(words, n[:len(n)-1], n[1:])
			}
		}
	}
	rng := rand.New(rand.NewPCG(27, 34))
	seps := []string{" ", "", "  ", "\n", ", "}
	for i := range 30000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteString(seps[rng.IntN(len(seps))])
		}
		text := b.String()
		for name, f := range filteredPatterns {
			if got, want := f.MatchString(text), f.re.MatchString(text); got != want {
				t.Fatalf("text %d %q: %s filtered says %v, its regexp %v", i, text, name, got, want)
			}
		}
	}
}

func FuzzFilterAgreesWithItsPattern(f *testing.F) {
	for _, s := range []string{"what would happen if i set q1 to 105 a", "restore q1 to yesterday's value", "read-only: show the orbit",
		"over the last 2 hours", "set it tomorrow at 14:30", "was wäre wenn ich q1 auf 105 a setze"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for name, p := range filteredPatterns {
			if got, want := p.MatchString(text), p.re.MatchString(text); got != want {
				t.Fatalf("%q: %s filtered says %v, its regexp %v", text, name, got, want)
			}
		}
	})
}

func BenchmarkHypotheticalFiltered(b *testing.B) {
	msg := strings.ToLower("Please set the BTS quadrupole Q1 current to 105 A and check the orbit afterwards")
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			hypotheticalPattern.re.MatchString(msg)
		}
	})
	b.Run("filtered", func(b *testing.B) {
		for b.Loop() {
			hypotheticalPattern.MatchString(msg)
		}
	})
}
