package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

var rfT0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// rfSeries is n samples a minute apart of a channel.
func rfSeries(name string, n int, base float64) capabilities.Series {
	s := capabilities.Series{Name: name, Units: "kV"}
	for i := range n {
		s.Add(rfT0.Add(time.Duration(i)*time.Minute), base+float64(i%7)/1000)
	}
	return s
}

// historyCap returns a time series of two channels and a table of their
// last values, and counts its executions.
func historyCap(t testing.TB, runs *atomic.Int32, points int) capabilities.Capability {
	t.Helper()
	c := capabilities.Define(capabilities.Definition{
		Name: "rf_history", Description: "Retrieve the archived history of the RF cavity voltage over a time range",
		Provides: []string{"RF_HISTORY"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for the history of the RF cavity voltage.",
			Examples: []capabilities.ClassifierExample{{Query: "Show me the RF cavity voltage over the last 2 hours", Result: true, Reason: "history"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			runs.Add(1)
			s1, s2 := rfSeries("SR:RF:CAV1:VOLT", points, 4.8), rfSeries("SR:RF:CAV2:VOLT", points, 4.7)
			return capabilities.Result("RF_HISTORY", map[string]int{"points": points}, "RF cavity voltages retrieved").With(
				capabilities.NewTimeSeries("RF cavity voltage", s1, s2),
				capabilities.NewTable("last values", []capabilities.Column{{Name: "channel"}, {Name: "last", Units: "kV"}},
					[]any{s1.Name, s1.Values[points-1]}, []any{s2.Name, s2.Values[points-1]})), nil
		},
	})
	return c
}

func registry(t testing.TB, caps ...capabilities.Capability) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	for _, c := range caps {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

func artifactEvents(o outcome) []agent.Event {
	var out []agent.Event
	for _, ev := range o.events {
		if ev.Type == agent.EventArtifact {
			out = append(out, ev)
		}
	}
	return out
}

// The compiled agent (offline nodes) sends each artifact as an event right
// after its step's step_end, keeps it in the turn's step result, and a
// later turn neither carries it in its checkpoints nor loses it: Artifacts
// reads it from the earlier turn's last checkpoint.
func TestArtifactsOnTheCompiledAgent(t *testing.T) {
	var runs atomic.Int32
	a := mustAgent(t, agent.Config{Registry: registry(t, historyCap(t, &runs, 120))})
	o := run(t, a, "rf", "Show me the RF cavity voltage over the last 2 hours")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if m := o.message(); m == nil || m.Kind != state.KindAnswer {
		t.Fatalf("message %+v", m)
	}
	evs := artifactEvents(o)
	if len(evs) != 2 {
		t.Fatalf("%d artifact events, want 2: %+v", len(evs), o.events)
	}
	// Right after the step's step_end, in the order returned.
	for i, ev := range o.events {
		if ev.Type == agent.EventStepEnd && ev.Capability == "rf_history" {
			if o.events[i+1].Type != agent.EventArtifact || o.events[i+2].Type != agent.EventArtifact {
				t.Fatalf("events after step_end: %s, %s", o.events[i+1].Type, o.events[i+2].Type)
			}
		}
	}
	ts := evs[0].Artifact
	if ts.ID != "t1.p1.s0.0" || ts.Kind != capabilities.ArtifactTimeSeries || ts.Turn != 1 || ts.Step != 0 || ts.Capability != "rf_history" ||
		evs[0].Capability != "rf_history" || evs[0].Attempt != 1 {
		t.Fatalf("time series artifact %+v (event %+v)", ts, evs[0])
	}
	if evs[1].Artifact.ID != "t1.p1.s0.1" || evs[1].Artifact.Kind != capabilities.ArtifactTable || len(evs[1].Artifact.Table.Rows) != 2 {
		t.Fatalf("table artifact %+v", evs[1].Artifact)
	}
	want := rfSeries("SR:RF:CAV1:VOLT", 120, 4.8)
	got := ts.TimeSeries.Series[0]
	if got.Name != want.Name || got.Units != "kV" || len(got.Values) != 120 || len(got.TimesMs) != 120 {
		t.Fatalf("series %s %s: %d values, %d times", got.Name, got.Units, len(got.Values), len(got.TimesMs))
	}
	for i := range want.Values {
		if got.Values[i] != want.Values[i] || got.TimesMs[i] != want.TimesMs[i] {
			t.Fatalf("sample %d: %v@%d, want %v@%d", i, got.Values[i], got.TimesMs[i], want.Values[i], want.TimesMs[i])
		}
	}

	// In the state, with the step's result.
	st, _, err := a.State(context.Background(), "rf")
	if err != nil {
		t.Fatal(err)
	}
	var stored []capabilities.Artifact
	for _, r := range st.Turn.Results {
		stored = append(stored, r.Artifacts...)
	}
	if len(stored) != 2 || stored[0].ID != ts.ID || len(stored[0].TimeSeries.Series[1].Values) != 120 {
		t.Fatalf("state keeps %+v", stored)
	}
	arts, turn, err := a.Artifacts(context.Background(), "rf", 0)
	if err != nil || turn != 1 || len(arts) != 2 || arts[0].ID != "t1.p1.s0.0" || arts[1].ID != "t1.p1.s0.1" {
		t.Fatalf("Artifacts(latest) = %d artifacts, turn %d, %v", len(arts), turn, err)
	}

	// A second turn starts without them and keeps its own.
	o2 := run(t, a, "rf", "and the RF cavity voltage over the last 2 hours again?")
	if o2.err != nil {
		t.Fatal(o2.err)
	}
	if evs := artifactEvents(o2); len(evs) != 2 || evs[0].Artifact.ID != "t2.p1.s0.0" {
		t.Fatalf("second turn's artifacts %+v", evs)
	}
	cps, err := a.Graph().Store().List(context.Background(), "rf", checkpoint.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if s := string(cp.State); strings.Contains(s, `"t1.p1.s0.0"`) && strings.Contains(s, `"t2.`) {
			t.Fatalf("a checkpoint of turn 2 carries turn 1's artifacts")
		}
	}
	arts, turn, err = a.Artifacts(context.Background(), "rf", 1)
	if err != nil || turn != 1 || len(arts) != 2 || arts[0].ID != "t1.p1.s0.0" || len(arts[0].TimeSeries.Series[0].Values) != 120 {
		t.Fatalf("Artifacts(turn 1) = %d artifacts, turn %d, %v", len(arts), turn, err)
	}
	if _, _, err := a.Artifacts(context.Background(), "rf", 3); !errors.Is(err, agent.ErrUnknownTurn) {
		t.Fatalf("Artifacts(turn 3) = %v, want ErrUnknownTurn", err)
	}
	if _, _, err := a.Artifacts(context.Background(), "nope", 0); !errors.Is(err, agent.ErrUnknownThread) {
		t.Fatalf("Artifacts(unknown thread) = %v, want ErrUnknownThread", err)
	}
}

// An artifact over the limit is replaced by a note: the step succeeds, the
// answer is written, and the note says what was left out and why.
func TestArtifactOverTheLimitIsLeftOutWithANote(t *testing.T) {
	var runs atomic.Int32
	a := mustAgent(t, agent.Config{Registry: registry(t, historyCap(t, &runs, 2000)), MaxArtifactBytes: 4096})
	o := run(t, a, "big", "Show me the RF cavity voltage over the last 2 hours")
	if o.err != nil {
		t.Fatal(o.err)
	}
	if m := o.message(); m == nil || m.Kind != state.KindAnswer {
		t.Fatalf("the turn ends with %+v, want an answer", m)
	}
	evs := artifactEvents(o)
	if len(evs) != 2 {
		t.Fatalf("%d artifact events", len(evs))
	}
	big, small := evs[0].Artifact, evs[1].Artifact
	if big.TimeSeries != nil || big.Kind != capabilities.ArtifactTimeSeries || big.ID != "t1.p1.s0.0" || big.Title != "RF cavity voltage" ||
		!strings.Contains(big.Omitted, "limits.max_artifact_bytes") || !strings.Contains(big.Omitted, "4.0 KiB") {
		t.Fatalf("over-limit artifact %+v", big)
	}
	if small.Table == nil || small.Omitted != "" {
		t.Fatalf("the small table is kept whole: %+v", small)
	}
	arts, _, err := a.Artifacts(context.Background(), "big", 0)
	if err != nil || len(arts) != 2 || arts[0].Omitted == "" || arts[0].TimeSeries != nil {
		t.Fatalf("stored %+v, %v", arts, err)
	}
	if _, err := agent.New(agent.Config{Registry: registry(t, historyCap(t, &runs, 1)), MaxArtifactBytes: -1}); err == nil ||
		!strings.Contains(err.Error(), "MaxArtifactBytes") {
		t.Fatalf("a negative limit: %v", err)
	}
}

// An invalid artifact is the capability's bug: the step fails CRITICAL
// with a message naming the problem, and the turn ends in an error report.
func TestInvalidArtifactFailsTheStepCritical(t *testing.T) {
	calls := 0
	c := capabilities.Define(capabilities.Definition{
		Name: "rf_history", Description: "Retrieve the archived history of the RF cavity voltage over a time range",
		Provides: []string{"RF_HISTORY"},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			calls++
			return capabilities.Result("RF_HISTORY", 1, "x").With(capabilities.NewTimeSeries("RF",
				capabilities.Series{Name: "SR:RF:CAV1:VOLT", TimesMs: []int64{1, 2, 3}, Values: []float64{4.8, 4.8}})), nil
		},
	})
	a := mustAgent(t, agent.Config{Registry: registry(t, c)})
	o := run(t, a, "bad", "Show me the RF cavity voltage over the last 2 hours")
	if o.err != nil {
		t.Fatal(o.err)
	}
	m := o.message()
	if m == nil || m.Kind != state.KindErrorReport || m.Report == nil {
		t.Fatalf("message %+v", m)
	}
	if calls != 1 {
		t.Fatalf("the capability ran %d times; a CRITICAL failure is not retried", calls)
	}
	if len(artifactEvents(o)) != 0 {
		t.Fatal("a failed step sends no artifact")
	}
	st, _, _ := a.State(context.Background(), "bad")
	var found bool
	for _, r := range st.Turn.Results {
		if !r.Success && r.Severity == capabilities.Critical.String() && strings.Contains(r.Error, `series "SR:RF:CAV1:VOLT" has 3 times and 2 values`) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no CRITICAL result naming the problem: %+v", st.Turn.Results)
	}
}
