package tour_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/examples/errortour/tour"
)

func registry(t *testing.T) (*tour.Tour, *capabilities.Registry) {
	t.Helper()
	tr := tour.New()
	reg := capabilities.NewRegistry()
	if err := reg.Register(tr.Capabilities()...); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	return tr, reg
}

func run(t *testing.T, reg *capabilities.Registry, name, task string, attempt int) (capabilities.Output, capabilities.Classification, error) {
	t.Helper()
	c, ok := reg.Get(name)
	if !ok {
		t.Fatalf("no capability %s", name)
	}
	out, err := c.Execute(context.Background(), capabilities.Step{Task: task, Attempt: attempt})
	if err != nil {
		return out, capabilities.Classify(c, err, capabilities.ErrorContext{Capability: name, Attempt: attempt}), err
	}
	return out, capabilities.Classification{}, nil
}

func TestEveryScenarioFailsWithItsSeverity(t *testing.T) {
	_, reg := registry(t)
	tests := []struct {
		capability string
		sev        capabilities.Severity
		kind       string
		sentinel   error
	}{
		{"flaky_sensor", capabilities.Retriable, capabilities.KindTimeout, tour.ErrTransient},
		{"dead_sensor", capabilities.Retriable, capabilities.KindTimeout, tour.ErrTransient},
		{"moved_sensor", capabilities.Replanning, capabilities.KindNotFound, tour.ErrMoved},
		{"misrouted_request", capabilities.Reclassification, capabilities.KindInvalidInput, tour.ErrMisrouted},
		{"interlocked_valve", capabilities.Critical, "interlock", tour.ErrInterlock},
		{"corrupt_state", capabilities.Fatal, "corrupt_state", tour.ErrCorrupt},
		{"quota_hog", capabilities.Critical, capabilities.KindResourceExhausted, capabilities.ErrResourceExhausted},
		{"primary_source", capabilities.Critical, capabilities.KindConnection, tour.ErrPrimary},
	}
	if len(tests) != len(tour.Scenarios) {
		t.Fatalf("%d tests for %d scenarios", len(tests), len(tour.Scenarios))
	}
	for _, tt := range tests {
		_, cl, err := run(t, reg, tt.capability, "tour question", 1)
		if !errors.Is(err, tt.sentinel) || cl.Severity != tt.sev || cl.Kind != tt.kind || cl.UserMessage == "" {
			t.Errorf("%s: err %v classified %s/%s %q; want %s/%s", tt.capability, err, cl.Severity, cl.Kind, cl.UserMessage, tt.sev, tt.kind)
		}
	}
}

func TestFlakyRecoversDeadExhausts(t *testing.T) {
	_, reg := registry(t)
	flaky, _ := reg.Get("flaky_sensor")
	pol, _ := capabilities.HasOwnRetryPolicy(flaky)
	now := time.Now()
	for attempt := 1; ; attempt++ {
		out, cl, err := run(t, reg, "flaky_sensor", "Read the flaky sensor", attempt)
		if err == nil {
			if attempt != 3 || !strings.Contains(out.Values[0].Summary, "attempt 3") {
				t.Errorf("flaky answered on attempt %d: %s", attempt, out.Values[0].Summary)
			}
			break
		}
		d, ok := pol.Next(capabilities.Attempt{Number: attempt, Kind: cl.Kind}, now, nil)
		if !ok || d != 100*time.Millisecond*time.Duration(1<<(attempt-1)) {
			t.Fatalf("attempt %d: retry %v after %s", attempt, ok, d)
		}
	}
	dead, _ := reg.Get("dead_sensor")
	pol, _ = capabilities.HasOwnRetryPolicy(dead)
	attempts := 1
	for ; ; attempts++ {
		_, cl, err := run(t, reg, "dead_sensor", "Read the dead sensor", attempts)
		if err == nil {
			t.Fatal("the dead sensor answered")
		}
		if _, ok := pol.Next(capabilities.Attempt{Number: attempts, Kind: cl.Kind}, now, nil); !ok {
			break
		}
	}
	if attempts != 3 {
		t.Errorf("dead sensor gave up after %d attempts, want 3", attempts)
	}
}

func TestFirstTimeFailuresRecover(t *testing.T) {
	tr, reg := registry(t)
	for _, name := range []string{"moved_sensor", "misrouted_request"} {
		if _, _, err := run(t, reg, name, "q", 1); err == nil {
			t.Errorf("%s: first call succeeded", name)
		}
		if _, _, err := run(t, reg, name, "q", 1); err != nil {
			t.Errorf("%s: second call failed: %v", name, err)
		}
		if _, _, err := run(t, reg, name, "another question", 1); err == nil {
			t.Errorf("%s: a new task did not fail first", name)
		}
	}
	tr.Reset()
	if _, _, err := run(t, reg, "moved_sensor", "q", 1); err == nil {
		t.Error("Reset did not make moved_sensor fail again")
	}
}

func TestFallback(t *testing.T) {
	_, reg := registry(t)
	p, _ := reg.Get("primary_source")
	fp, ok := p.(capabilities.FallbackProvider)
	if !ok || len(fp.Fallbacks()) != 1 || fp.Fallbacks()[0] != "backup_sensor" {
		t.Fatalf("primary_source fallbacks: %v", fp)
	}
	out, _, err := run(t, reg, "backup_sensor", "Read the primary source", 1)
	if err != nil || !strings.Contains(out.Values[0].Summary, "backup_sensor answered") {
		t.Errorf("backup: %+v, %v", out, err)
	}
	b, _ := reg.Get("backup_sensor")
	if g, ok := b.(capabilities.ClassifierGuideProvider); ok && g.ClassifierGuide() != nil {
		t.Error("backup_sensor has a classifier guide; it should be reachable only as a fallback")
	}
}

func TestScenarioFor(t *testing.T) {
	for _, sc := range tour.Scenarios {
		got, ok := tour.ScenarioFor(sc.Question)
		if !ok || got.Capability != sc.Capability {
			t.Errorf("ScenarioFor(%q) = %s, %v; want %s", sc.Question, got.Capability, ok, sc.Capability)
		}
	}
	if _, ok := tour.ScenarioFor("what is the beam current"); ok {
		t.Error("a non-tour question selected a scenario")
	}
}

func ExampleScenarioFor() {
	sc, _ := tour.ScenarioFor("Please read the flaky sensor")
	fmt.Println(sc.Capability, sc.Severity)
	// Output: flaky_sensor retriable
}
