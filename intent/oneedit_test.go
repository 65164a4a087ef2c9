package intent

import (
	"math/rand/v2"
	"testing"

	"github.com/capgraph/capgraph/typo"
)

// TestOneEditIsDistanceOne compares oneEdit with typo.Distance on every
// pair of strings of up to five letters of a three-letter alphabet (every
// kind of edit, at every place, among repeated letters) and on random
// pairs of words one or two edits apart.
func TestOneEditIsDistanceOne(t *testing.T) {
	var words []string
	var grow func(string)
	grow = func(s string) {
		words = append(words, s)
		if len(s) == 5 {
			return
		}
		for _, c := range "abc" {
			grow(s + string(c))
		}
	}
	grow("")
	for _, a := range words {
		for _, b := range words {
			if got, want := oneEdit(a, b), typo.Distance(a, b) == 1; got != want {
				t.Fatalf("oneEdit(%q, %q) = %v, distance %d", a, b, got, typo.Distance(a, b))
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	edit := func(s []byte) []byte {
		i := r.IntN(len(s) + 1)
		switch r.IntN(4) {
		case 0:
			return append(s[:i:i], append([]byte{byte('a' + r.IntN(26))}, s[i:]...)...)
		case 1:
			if i < len(s) {
				return append(s[:i:i], s[i+1:]...)
			}
		case 2:
			if i < len(s) {
				s[i] = byte('a' + r.IntN(26))
			}
		case 3:
			if i+1 < len(s) {
				s[i], s[i+1] = s[i+1], s[i]
			}
		}
		return s
	}
	for range 200000 {
		v := []byte("increase decrease disable"[r.IntN(20):][:r.IntN(6)+1])
		w := edit(append([]byte(nil), v...))
		if r.IntN(2) == 0 {
			w = edit(w)
		}
		if got, want := oneEdit(string(w), string(v)), typo.Distance(string(w), string(v)) == 1; got != want {
			t.Fatalf("oneEdit(%q, %q) = %v, distance %d", w, v, got, typo.Distance(string(w), string(v)))
		}
	}
}
