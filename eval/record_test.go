package eval_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// Runs recorded in a store are listed newest first, with the cases that failed.
func TestRecordAndRecent(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	s := parse(t, `
name: recorded
cases:
  - {id: good, turns: ["What is the beam current?"]}
  - {id: bad, turns: ["What is the beam current?"], expect: {route: {plans: 3}}}
`)
	first := run(t, s, target(t), eval.Options{})
	s.Cases = s.Cases[:1]
	second := run(t, s, target(t), eval.Options{})
	for _, r := range []*eval.Report{first, second} {
		if err := eval.Record(ctx, store, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := eval.Recent(ctx, store, "recorded", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Passed || got[1].Passed || strings.Join(got[1].Failed, ",") != "bad" || got[1].Runs != 2 {
		t.Fatalf("recent %+v", got)
	}
	if other, _ := eval.Recent(ctx, store, "other", 10); len(other) != 0 {
		t.Fatalf("another suite's runs: %+v", other)
	}
	var buf bytes.Buffer
	if err := eval.WriteHistory(&buf, got); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "recorded  PASS") || !strings.Contains(lines[2], "FAIL") || !strings.HasSuffix(lines[2], "bad") {
		t.Fatalf("history:\n%s", buf.String())
	}
}
