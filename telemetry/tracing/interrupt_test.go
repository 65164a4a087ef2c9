package tracing_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"

	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

// A turn that stops for a human's approval is no failure: no span is red,
// no exception is recorded, and the node that asked carries an
// "interrupted" event instead (Jaeger and Tempo showed every approval as
// an error, and alerts on error spans fired in normal operation).
func TestApprovalPauseIsAnInterruptNotAnError(t *testing.T) {
	obs, exp := newTracer(t)
	a, _ := teletest.Agent(t, memory.New(), obs, true)
	teletest.Turn(t, a, "op-9", teletest.Approval)
	spans := exp.GetSpans()
	var interrupted int
	for _, s := range spans {
		if s.Status.Code == codes.Error {
			t.Errorf("span %s has status Error (%q)", s.Name, s.Status.Description)
		}
		for _, ev := range s.Events {
			switch ev.Name {
			case "exception":
				t.Errorf("span %s records an exception: %v", s.Name, ev.Attributes)
			case tracing.EventInterrupted:
				interrupted++
				if s.Name != "node set_current" {
					t.Errorf("the interrupted event is on %s, want the node that asked", s.Name)
				}
			}
		}
	}
	if interrupted != 1 {
		t.Errorf("%d interrupted events, want 1:\n%s", interrupted, tree(spans, tracing.AttrOutcome))
	}
	if got := tree(spans, tracing.AttrOutcome); !strings.HasPrefix(got, "capgraph.run outcome=interrupted\n") {
		t.Errorf("span tree:\n%s\nwant the run's outcome waiting_approval", got)
	}
}
