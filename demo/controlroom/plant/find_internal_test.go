package plant

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// splitIdentifier reads a term exactly as the regular expression it
// replaced did, over the terms a query gives and the edge cases around
// them: case, letters beyond ASCII, leading zeros, a number alone, a
// letter after the number, numbers too long for an int.
func TestSplitIdentifierReadsAsTheRegexpItReplaced(t *testing.T) {
	re := regexp.MustCompile(`^([a-z]+)0*([0-9]+)$`)
	terms := []string{"", "q", "1", "q1", "c3", "cav2", "gauge12", "q007", "c000", "c0", "Q1", "qQ1", "é1", "cavité2",
		"q1a", "1q", "q-1", "q 1", "q1.5", "c99999999999999999999", "c0000000000000000000000001", "kly1", "x", "ma"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aqz09Z_-é")
	for range 5000 {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		terms = append(terms, string(b))
	}
	for _, term := range terms {
		prefix, n, ok := splitIdentifier(term)
		m := re.FindStringSubmatch(term)
		if ok != (m != nil) {
			t.Fatalf("splitIdentifier(%q) ok = %v, the regexp matched: %v", term, ok, m != nil)
		}
		if m == nil {
			continue
		}
		want, _ := strconv.Atoi(m[2])
		if prefix != m[1] || n != want {
			t.Fatalf("splitIdentifier(%q) = %q, %d; the regexp read %q, %d", term, prefix, n, m[1], want)
		}
	}
}

// intersectSorted keeps what both ascending lists hold, whichever is
// longer (it seeks through a long list and walks a short one).
func TestIntersectSortedKeepsWhatBothHold(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	list := func(n, max int) []int {
		var l []int
		for i := range max {
			if rng.IntN(max) < n {
				l = append(l, i)
			}
		}
		return l
	}
	for range 2000 {
		a, b := list(rng.IntN(40), 300), list(rng.IntN(300), 300)
		var want []int
		for _, x := range a {
			if slices.Contains(b, x) {
				want = append(want, x)
			}
		}
		if got := intersectSorted(slices.Clone(a), b); !slices.Equal(got, want) {
			t.Fatalf("intersectSorted(%v, %v) = %v, want %v", a, b, got, want)
		}
		if got := intersectSorted(slices.Clone(b), a); !slices.Equal(got, want) {
			t.Fatalf("intersectSorted(%v, %v) = %v, want %v", b, a, got, want)
		}
	}
}
