package graph

import (
	"bytes"
	"testing"
	"time"
)

func TestIDsIncreaseAndAreV7(t *testing.T) {
	var g idGen
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clocks := []struct {
		name string
		at   func(i int) time.Time
	}{
		{"one millisecond (counter overflows)", func(int) time.Time { return base }},
		{"advancing", func(i int) time.Time { return base.Add(time.Duration(i) * 10 * time.Microsecond) }},
		{"going back", func(i int) time.Time { return base.Add(-time.Duration(i) * time.Millisecond) }},
	}
	for _, c := range clocks {
		prev := g.next(c.at(0))
		for i := 1; i < 10000; i++ {
			id := g.next(c.at(i))
			if bytes.Compare(id[:], prev[:]) <= 0 {
				t.Fatalf("%s: id %d %s is not greater than %s", c.name, i, id, prev)
			}
			if id.Version() != 7 || id.Variant().String() != "RFC4122" {
				t.Fatalf("%s: id %s has version %d variant %s", c.name, id, id.Version(), id.Variant())
			}
			prev = id
		}
	}
	// The timestamp is the clock's millisecond when the clock moves forward.
	at := base.Add(time.Hour)
	id := g.next(at)
	if sec, nsec := id.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != at.UnixMilli() {
		t.Fatalf("id time %v, want %v", time.Unix(sec, nsec), at)
	}
}
