package plant

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The words that let a text reach a pattern (mayMatch) never change what
// the pattern says: over texts built from every word the patterns know, in
// any case, with the characters (?i) folds beyond ASCII, the filtered
// answer is the pattern's.
func TestPrefilteredPatternsAnswerAsThePatterns(t *testing.T) {
	cases := []struct {
		name  string
		re    *regexp.Regexp
		words []string
	}{
		{"count", countPattern, countWords},
		{"verdict", verdictPattern, verdictWords},
		{"last", lastPattern, timeRangeWords},
		{"since", sincePattern, timeRangeWords},
		{"yesterday", yesterdayPattern, timeRangeWords},
		{"today", todayPattern, timeRangeWords},
	}
	vocab := strings.Fields(`how many number of count is are was were does do look looks ok okay fine normal good healthy
		alright all right stable in range within limits spec any problem problems issues alarms trouble warnings doing
		status health of anything wrong so and but over during for from the last past previous 2 1.5 an one ten thirty
		seconds secs minutes mins hours hrs h days d weeks since yesterday today this morning beam current vacuum rf
		ſtatus oK heaLTHY mORNING SINCE`)
	rng := rand.New(rand.NewPCG(34, 5))
	texts := []string{"", "is the beam ok?", "how many BPMs", "status of the RF", "beam current over the past 2 hours",
		"since yesterday", "any alarms", "how is the vacuum doing", "ſtatus of the rf", "is it o\u212A", "ok, what now?"}
	for range 20000 {
		var b strings.Builder
		for i := range 1 + rng.IntN(8) {
			if i > 0 {
				b.WriteString([]string{" ", "  ", ", ", "\n"}[rng.IntN(4)])
			}
			w := vocab[rng.IntN(len(vocab))]
			switch rng.IntN(4) {
			case 0:
				w = strings.ToUpper(w)
			case 1:
				w = strings.ReplaceAll(strings.ReplaceAll(w, "s", "ſ"), "k", "\u212A")
			}
			b.WriteString(w)
		}
		texts = append(texts, b.String())
	}
	for _, tc := range cases {
		matched, skipped := 0, 0
		for _, text := range texts {
			if !mayMatch(text, tc.words) {
				skipped++
			}
			want := tc.re.MatchString(text)
			if got := mayMatch(text, tc.words) && tc.re.MatchString(text); got != want {
				t.Errorf("%s: %q: filtered %v, the pattern %v", tc.name, text, got, want)
			}
			if want {
				matched++
			}
		}
		if matched < 10 || skipped < 1000 {
			t.Errorf("%s: of %d texts %d matched, %d skipped by the filter: the texts do not test it", tc.name, len(texts), matched, skipped)
		}
	}
}
