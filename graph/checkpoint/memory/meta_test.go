package memory

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Packed metadata gives back the map it was packed from, and answers
// equality and filters as the map would (checkpoint.MatchMetadata).
func TestPackedMetaIsTheMap(t *testing.T) {
	long := strings.Repeat("é", 300) // a length that takes two varint bytes
	cases := []map[string]string{
		nil,
		{"owner": "alice"},
		{"": "", "a": "", "ab": "x", "a\x00b": "y"},
		{"title": long, "run": "run-1", "tenant": "lab", "thread": "chat-2", "user": ""},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		m := map[string]string{}
		for range rng.IntN(20) {
			m[randomText(rng)] = randomText(rng)
		}
		cases = append(cases, m)
	}
	for _, m := range cases {
		p := packMeta(m)
		got := p.unpack()
		if !maps.Equal(got, m) || (len(m) == 0) != (got == nil) {
			t.Fatalf("packMeta(%q).unpack() = %q", m, got)
		}
		if !p.equals(m) {
			t.Fatalf("%q does not equal the map it was packed from", m)
		}
		if packMeta(maps.Clone(m)) != p {
			t.Fatalf("equal maps pack differently: %q", m)
		}
		filters := []map[string]string{nil, {"missing": ""}, {"owner": "alice"}, {"owner": "bob"}, {"user": ""}}
		for k, v := range m {
			filters = append(filters, map[string]string{k: v}, map[string]string{k: v + "x"})
			other := maps.Clone(m)
			other[k] = v + "x"
			if p.equals(other) {
				t.Fatalf("%q equals a map with %q changed", m, k)
			}
			fewer := maps.Clone(m)
			delete(fewer, k)
			if p.equals(fewer) {
				t.Fatalf("%q equals a map without %q", m, k)
			}
			break
		}
		for _, f := range filters {
			if got, want := p.matches(f), checkpoint.MatchMetadata(m, f); got != want {
				t.Fatalf("%q matches %q: %v; the map: %v", m, f, got, want)
			}
		}
	}
}

func randomText(rng *rand.Rand) string {
	const alphabet = "ab\x00é\u2603z"
	var b strings.Builder
	for range rng.IntN(6) {
		b.WriteString(string([]rune(alphabet)[rng.IntN(6)]))
	}
	if rng.IntN(10) == 0 {
		b.WriteString(strings.Repeat("x", 130+rng.IntN(200)))
	}
	return b.String()
}
