package telemetry_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/logging/logrusadapter"
	"github.com/capgraph/capgraph/telemetry"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func lines(t *testing.T, buf *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.b.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// A traced turn that retries and replans, logged as JSON at info: one line
// per significant event, each with the thread, the run and the run's trace
// id; a step's lines name node, step, capability and attempt, a failure's
// its severity; no line holds the user's words or an error's text.
func TestLogLinesOfATurn(t *testing.T) {
	buf := &syncBuffer{}
	logger, err := logrusadapter.New(logrusadapter.Config{Level: "info", Format: logrusadapter.FormatJSON, Output: buf})
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	obs := telemetry.Join(tracing.New(tp), nil, telemetry.Logs(logger))
	a, _ := teletest.Agent(t, memory.New(), obs, false)
	teletest.Turn(t, a, "op-12", teletest.Replanned)

	traceID := exp.GetSpans()[0].SpanContext.TraceID().String()
	ls := lines(t, buf)
	count := map[string]int{}
	for _, l := range ls {
		msg := l["msg"].(string)
		count[msg]++
		if l["thread"] != "op-12" || l["run"] == nil || l["trace_id"] != traceID {
			t.Errorf("line %v: want thread op-12, the run and trace id %s", l, traceID)
		}
		raw, _ := json.Marshal(l)
		for _, secret := range []string{"beam current", "replan if", "timed out", "no channel named", "401.5"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("info line holds user content or an error text (%q): %s", secret, raw)
			}
		}
		switch msg {
		case "run started":
			if l["resume"] != false || l["answers_approval"] != nil {
				t.Errorf("a new turn's start: %v", l)
			}
		case "step failed", "step ended":
			if l["node"] != "read_current" && l["node"] != "find_channel" || l["capability"] == nil || l["step"] == nil || l["attempt"] == nil {
				t.Errorf("step line without node, step, capability and attempt: %v", l)
			}
		case "attempt failed":
			if l["severity"] != "retriable" && l["severity"] != "replanning" {
				t.Errorf("failure line severity %v", l["severity"])
			}
		}
	}
	want := map[string]int{"run started": 1, "run ended": 1, "node ended": 9, "step ended": 2, "step failed": 2,
		"attempt failed": 2, "retry scheduled": 1}
	for msg, n := range want {
		if count[msg] != n {
			t.Errorf("%d lines %q, want %d (all: %v)", count[msg], msg, n, count)
		}
	}
	if len(ls) != 18 {
		t.Errorf("%d lines, want 18: %v", len(ls), count)
	}
}

// At debug, the error texts are there for the engineer.
func TestDebugLinesHoldTheErrors(t *testing.T) {
	buf := &syncBuffer{}
	logger, err := logrusadapter.New(logrusadapter.Config{Level: "debug", Format: logrusadapter.FormatJSON, Output: buf})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := teletest.Agent(t, memory.New(), telemetry.Logs(logger), false)
	teletest.Turn(t, a, "op-13", teletest.ErrorReport)
	var found bool
	for _, l := range lines(t, buf) {
		if e, _ := l["error"].(string); l["level"] == "debug" && strings.Contains(e, "the interlock is tripped") {
			found = true
		}
		if _, has := l["trace_id"]; has {
			t.Errorf("untraced run logs a trace id: %v", l)
		}
	}
	if !found {
		t.Errorf("no debug line with the error text:\n%s", buf.b.String())
	}
}

// A turn that stops for an approval logs no warning (alerts on warnings
// fired in normal operation): the node that asked is "node interrupted" at
// info, and the approval is "approval required".
func TestApprovalPauseLogsNoWarning(t *testing.T) {
	buf := &syncBuffer{}
	logger, err := logrusadapter.New(logrusadapter.Config{Level: "info", Format: logrusadapter.FormatJSON, Output: buf})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := teletest.Agent(t, memory.New(), telemetry.Logs(logger), true)
	teletest.Turn(t, a, "op-14", teletest.Approval)
	count := map[string]int{}
	for _, l := range lines(t, buf) {
		count[l["msg"].(string)]++
		if l["level"] != "info" {
			t.Errorf("line at %v: %v", l["level"], l)
		}
		if l["msg"] == "node interrupted" && l["node"] != "set_current" {
			t.Errorf("interrupted line names node %v, want set_current", l["node"])
		}
	}
	if count["node interrupted"] != 1 || count["approval required"] != 1 || count["node failed"] != 0 {
		t.Errorf("lines %v: want one node interrupted, one approval required, no node failed", count)
	}
}
