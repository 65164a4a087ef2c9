package plant_test

import (
	"testing"
	"time"

	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

// BenchmarkFind: channel finding runs once per question; it must stay far
// below an LLM call.
func BenchmarkFind(b *testing.B) {
	p, _ := plant.New(plant.Config{Now: func() time.Time { return t0 }})
	for b.Loop() {
		if _, err := p.Find("What is the vacuum pressure in sector 3?", 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindTypo: a misspelt word is matched against the vocabulary by
// edit distance.
func BenchmarkFindTypo(b *testing.B) {
	p, _ := plant.New(plant.Config{Now: func() time.Time { return t0 }})
	for b.Loop() {
		if _, err := p.Find("whats the vaccum presure in sec 3", 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFindNoMatch: nothing matches; the explanation lists what exists.
func BenchmarkFindNoMatch(b *testing.B) {
	p, _ := plant.New(plant.Config{Now: func() time.Time { return t0 }})
	for b.Loop() {
		if _, err := p.Find("temperature of the klystron", 0); err == nil {
			b.Fatal("found a klystron temperature")
		}
	}
}

// BenchmarkHistory2h: one channel over two hours (121 samples).
func BenchmarkHistory2h(b *testing.B) {
	p, _ := plant.New(plant.Config{Now: func() time.Time { return t0 }})
	for b.Loop() {
		if _, err := p.History("SR:RF:CAV1:VOLT", t0.Add(-2*time.Hour), t0); err != nil {
			b.Fatal(err)
		}
	}
}
