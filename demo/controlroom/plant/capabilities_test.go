package plant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

// entry turns an output value into the context entry a later step resolves.
func entry(t *testing.T, v capabilities.ContextValue, key string) capabilities.ContextEntry {
	t.Helper()
	b, err := json.Marshal(v.Value)
	if err != nil {
		t.Fatal(err)
	}
	return capabilities.ContextEntry{Type: v.Type, Key: key, Value: b, Summary: v.Summary}
}

// find runs channel_finding on a task and returns its output as an entry.
func find(t *testing.T, p *plant.Plant, task string) capabilities.ContextEntry {
	t.Helper()
	out, err := plant.NewChannelFinding(p).Execute(context.Background(), capabilities.Step{Task: task,
		PlannedStep: capabilities.PlannedStep{ContextKey: "chans"}})
	if err != nil {
		t.Fatalf("channel_finding(%q): %v", task, err)
	}
	if len(out.Values) != 1 || out.Values[0].Type != plant.ChannelAddressesType {
		t.Fatalf("channel_finding output %+v", out)
	}
	return entry(t, out.Values[0], "chans")
}

func stepWith(task string, params map[string]any, in ...capabilities.ContextEntry) capabilities.Step {
	s := capabilities.Step{Task: task, Attempt: 1, Resolved: in,
		PlannedStep: capabilities.PlannedStep{ContextKey: "out", Parameters: params}}
	for _, e := range in {
		s.Inputs = append(s.Inputs, capabilities.InputRef{Type: e.Type, Key: e.Key})
	}
	return s
}

func TestRegistry(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	reg := capabilities.NewRegistry()
	if err := plant.Register(reg, p); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Names(), ","); got != "channel_finding,channel_read,archiver_retrieval,channel_write" {
		t.Errorf("names = %s", got)
	}
	for _, c := range reg.All() {
		cg, ok1 := c.(capabilities.ClassifierGuideProvider)
		og, ok2 := c.(capabilities.OrchestratorGuideProvider)
		if !ok1 || !ok2 || len(cg.ClassifierGuide().Examples) == 0 || len(og.OrchestratorGuide().Examples) == 0 {
			t.Errorf("%s lacks guides with examples", c.Name())
			continue
		}
		for _, ex := range og.OrchestratorGuide().Examples {
			if ex.Step.Capability != c.Name() {
				t.Errorf("%s: orchestrator example uses %q", c.Name(), ex.Step.Capability)
			}
		}
		if _, ok := c.(capabilities.ErrorClassifier); !ok {
			t.Errorf("%s has no ClassifyError", c.Name())
		}
		if pol, ok := capabilities.HasOwnRetryPolicy(c); ok {
			if err := pol.Validate(); err != nil {
				t.Errorf("%s retry policy: %v", c.Name(), err)
			}
		}
	}
}

func TestChannelRead(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	chans := find(t, p, "What is the beam current?")
	rd := plant.NewChannelRead(p)
	out, err := rd.Execute(context.Background(), stepWith("What is the beam current?", nil, chans))
	if err != nil {
		t.Fatal(err)
	}
	v := out.Values[0].Value.(plant.ChannelValues)
	if len(v.Values) != 1 || v.Values[0].Channel != "SR:DCCT:CURRENT" || v.Values[0].Units != "mA" {
		t.Fatalf("values %+v", v)
	}
	want := fmt.Sprintf("SR:DCCT:CURRENT = %.2f mA (stored beam current in the storage ring (DCCT)); read at 2026-11-21 12:00:00 UTC", v.Values[0].Value)
	if out.Values[0].Summary != want {
		t.Errorf("summary\n got %q\nwant %q", out.Values[0].Summary, want)
	}

	// The channels parameter works without an input.
	out, err = rd.Execute(context.Background(), stepWith("", map[string]any{"channels": []any{"sr:beam:lifetime"}}))
	if err != nil || !strings.Contains(out.Values[0].Summary, "SR:BEAM:LIFETIME = ") {
		t.Errorf("channels parameter: %+v, %v", out, err)
	}

	// Faults and missing input, classified by the reference's table.
	p.InjectFaults(plant.Faults{ReadTimeouts: 1})
	_, err = rd.Execute(context.Background(), stepWith("", nil, chans))
	if c := rd.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Retriable || c.Kind != capabilities.KindTimeout {
		t.Errorf("timeout classified %+v", c)
	}
	_, err = rd.Execute(context.Background(), stepWith("", nil))
	if c := rd.ClassifyError(err, capabilities.ErrorContext{}); !errors.Is(err, capabilities.ErrMissingInput) || c.Severity != capabilities.Replanning {
		t.Errorf("missing input: %v classified %+v", err, c)
	}
	_, err = rd.Execute(context.Background(), stepWith("", map[string]any{"channels": []any{"NO:SUCH"}}))
	if c := rd.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Replanning || c.Kind != capabilities.KindNotFound {
		t.Errorf("unknown channel classified %+v", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rd.Execute(ctx, stepWith("", nil, chans)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read err = %v", err)
	}
}

func TestClassifyTables(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	ec := capabilities.ErrorContext{}
	wrap := func(err error) error { return &plant.ChannelError{Op: "x", Channel: "A:B", Err: err} }
	tests := []struct {
		cap  capabilities.ErrorClassifier
		err  error
		sev  capabilities.Severity
		kind string
	}{
		{plant.NewChannelFinding(p), plant.ErrNoMatch, capabilities.Critical, capabilities.KindNotFound},
		{plant.NewChannelFinding(p), &plant.NoMatch{Query: "q", Unknown: []string{"flux"}}, capabilities.Critical, capabilities.KindNotFound},
		{plant.NewChannelFinding(p), errors.New("boom"), capabilities.Critical, capabilities.KindUnknown},
		{plant.NewChannelFinding(p), context.DeadlineExceeded, capabilities.SeverityUnset, ""},
		{plant.NewChannelRead(p), wrap(plant.ErrTimeout), capabilities.Retriable, capabilities.KindTimeout},
		{plant.NewChannelRead(p), wrap(plant.ErrUnknownChannel), capabilities.Replanning, capabilities.KindNotFound},
		{plant.NewChannelRead(p), errors.New("odd"), capabilities.Retriable, capabilities.KindUnknown},
		{plant.NewArchiverRetrieval(p), wrap(plant.ErrTimeout), capabilities.Retriable, capabilities.KindTimeout},
		{plant.NewArchiverRetrieval(p), wrap(plant.ErrDisconnected), capabilities.Critical, capabilities.KindConnection},
		{plant.NewArchiverRetrieval(p), wrap(plant.ErrNoData), capabilities.Replanning, capabilities.KindNotFound},
		{plant.NewArchiverRetrieval(p), fmt.Errorf("x: %w", capabilities.ErrMissingInput), capabilities.Replanning, capabilities.KindMissingInput},
		{plant.NewChannelWrite(p), fmt.Errorf("x: %w", capabilities.ErrMissingInput), capabilities.Replanning, capabilities.KindMissingInput},
		{plant.NewArchiverRetrieval(p), errors.New("odd"), capabilities.Retriable, capabilities.KindUnknown},
		{plant.NewChannelWrite(p), capabilities.ErrWritesDisabled, capabilities.Critical, capabilities.KindWritesDisabled},
		{plant.NewChannelWrite(p), &plant.LimitError{Channel: "A:B", Value: 1}, capabilities.Critical, capabilities.KindLimitViolation},
		{plant.NewChannelWrite(p), plant.ErrAmbiguousWrite, capabilities.Replanning, capabilities.KindInvalidInput},
		{plant.NewChannelWrite(p), wrap(plant.ErrTimeout), capabilities.Retriable, capabilities.KindTimeout},
		{plant.NewChannelWrite(p), wrap(plant.ErrNotWritable), capabilities.Critical, capabilities.KindInvalidInput},
		{plant.NewChannelWrite(p), wrap(plant.ErrVerification), capabilities.Critical, capabilities.KindUnknown},
		{plant.NewChannelWrite(p), errors.New("odd"), capabilities.Critical, capabilities.KindUnknown},
		{plant.NewChannelWrite(p), capabilities.NewError(capabilities.Fatal, "custom", "stated", nil), capabilities.Fatal, "custom"},
	}
	for i, tt := range tests {
		c := tt.cap.ClassifyError(tt.err, ec)
		if c.Severity != tt.sev || c.Kind != tt.kind {
			t.Errorf("%d: %T(%v) = %s/%s, want %s/%s", i, tt.cap, tt.err, c.Severity, c.Kind, tt.sev, tt.kind)
		}
		if tt.sev != capabilities.SeverityUnset && c.UserMessage == "" {
			t.Errorf("%d: no user message", i)
		}
	}
}

func TestArchiverRetrieval(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	chans := find(t, p, "RF cavity voltage")
	ar := plant.NewArchiverRetrieval(p)
	tests := []struct {
		name   string
		task   string
		params map[string]any
		span   time.Duration
		note   bool
	}{
		{"from the task", "Show me the RF cavity voltage over the last 2 hours", nil, 2 * time.Hour, false},
		{"duration parameter", "", map[string]any{"duration": "30m"}, 30 * time.Minute, false},
		{"start/end parameters", "", map[string]any{"start": "2026-11-21T09:00:00Z", "end": "2026-11-21T10:00:00Z"}, time.Hour, false},
		{"start only", "", map[string]any{"start": "2026-11-21T11:00:00Z"}, time.Hour, false},
		{"no range", "RF voltage trend", nil, time.Hour, true},
	}
	for _, tt := range tests {
		out, err := ar.Execute(context.Background(), stepWith(tt.task, tt.params, chans))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		d := out.Values[0].Value.(plant.ArchiverData)
		if d.Range.Duration() != tt.span || len(d.Series) != 4 || (d.Note != "") != tt.note {
			t.Errorf("%s: range %s, %d series, note %q", tt.name, d.Range.Duration(), len(d.Series), d.Note)
		}
		sum := out.Values[0].Summary
		for _, w := range []string{"SR:RF:CAV1:VOLT: ", "min ", "max ", "mean ", "std ", "kV"} {
			if !strings.Contains(sum, w) {
				t.Errorf("%s: summary lacks %q: %s", tt.name, w, sum)
			}
		}
	}
	for _, params := range []map[string]any{{"start": "yesterday"}, {"duration": "-1h"}, {"start": "2026-11-21T10:00:00Z", "end": "2026-11-21T09:00:00Z"}} {
		_, err := ar.Execute(context.Background(), stepWith("", params, chans))
		if c := ar.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Replanning || c.Kind != capabilities.KindInvalidInput {
			t.Errorf("params %v: %v classified %+v", params, err, c)
		}
	}
	p.InjectFaults(plant.Faults{ArchiverDown: true})
	_, err := ar.Execute(context.Background(), stepWith("last hour", nil, chans))
	if c := ar.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Critical {
		t.Errorf("archiver down classified %+v", c)
	}
}

func TestChannelFindingFallsBackToTask(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	cf := plant.NewChannelFinding(p)
	// An objective that names no channel: the task is used.
	st := capabilities.Step{Task: "What is the beam current?", PlannedStep: capabilities.PlannedStep{TaskObjective: "Run channel finding"}}
	out, err := cf.Execute(context.Background(), st)
	if err != nil || !strings.Contains(out.Values[0].Summary, `Found 1 channel for "What is the beam current?": SR:DCCT:CURRENT`) {
		t.Errorf("fallback to task: %+v, %v", out, err)
	}
	// Nothing matches: a result that says so, not an error to replan on.
	out, err = cf.Execute(context.Background(), stepWith("", map[string]any{"query": "weather in Paris"}))
	if err != nil || len(out.Values) != 1 {
		t.Fatalf("no match: %+v, %v", out, err)
	}
	var addrs plant.ChannelAddresses
	if err := json.Unmarshal(entry(t, out.Values[0], "x").Value, &addrs); err != nil {
		t.Fatal(err)
	}
	if addrs.NotFound == nil || len(addrs.Channels) != 0 || !strings.Contains(out.Values[0].Summary, `No channel matches "weather" or "paris"`) {
		t.Errorf("no match: %+v, summary %q", addrs, out.Values[0].Summary)
	}
	_, err = cf.Execute(context.Background(), stepWith("beam current", map[string]any{"max_results": "many"}))
	if c := cf.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Replanning || c.Kind != capabilities.KindInvalidInput {
		t.Errorf("bad max_results classified %+v", c)
	}
}

func TestChannelWrite(t *testing.T) {
	const task = "Set the quadrupole Q1 current in the BTS line to 105 A"
	p, _ := newPlant(t, plant.Config{})
	chans := find(t, p, task)
	w := plant.NewChannelWrite(p)

	st := stepWith(task, nil, chans)
	// The one summary of the write: the human approves it, the audit records it.
	if !capabilities.HasSideEffects(w) {
		t.Error("channel_write does not declare side effects, so nothing asks a human")
	}
	if a, err := w.DescribeAction(st); err != nil || a.Summary != "set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A" {
		t.Errorf("DescribeAction = %+v, %v", a, err)
	}

	// Writes disabled: refused, CRITICAL, nothing written.
	_, err := w.Execute(context.Background(), st)
	var ce *capabilities.Error
	if !errors.Is(err, capabilities.ErrWritesDisabled) || !errors.As(err, &ce) || ce.Severity != capabilities.Critical {
		t.Fatalf("writes disabled: err = %v", err)
	}
	if sp, _ := p.Setpoint("BTS:MAG:Q1:CURRENT"); sp != 92 {
		t.Fatalf("setpoint changed to %g with writes disabled", sp)
	}

	st.WritesEnabled = true
	st.IdempotencyKey = "thread/1/0/1"
	out, err := w.Execute(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	res := out.Values[0].Value.(plant.ChannelWriteResults)
	if len(res.Writes) != 1 || res.Writes[0].Old != 92 || res.Writes[0].New != 105 || !res.Writes[0].Verified {
		t.Errorf("result %+v", res)
	}
	if out.Values[0].Summary != "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A (readback verified)" {
		t.Errorf("summary %q", out.Values[0].Summary)
	}
	// The readback reads what was written, without writing.
	act, err := w.DescribeAction(st)
	if err != nil {
		t.Fatal(err)
	}
	if rb, err := w.Readback(context.Background(), act); err != nil || len(rb) != 1 || rb[0].Target != "BTS:MAG:Q1:CURRENT" || rb[0].Value != 105.0 || rb[0].Unit != "A" {
		t.Errorf("readback %+v, %v", rb, err)
	}
	if act.Changes[0].Tolerance <= 0 {
		t.Errorf("change %+v declares no tolerance", act.Changes[0])
	}

	// Outside the limits: refused when described, so nobody is asked, and
	// by Execute with a non-retryable limit violation known not applied.
	over := stepWith("", map[string]any{"value": 180}, chans)
	over.WritesEnabled = true
	var refused *capabilities.ActionRefusedError
	if _, err := w.DescribeAction(over); !errors.As(err, &refused) || refused.Reason != "limits" || !strings.Contains(refused.Message, "outside the limits") {
		t.Errorf("describing an over-limit write: %v", err)
	}
	_, err = w.Execute(context.Background(), over)
	if !errors.Is(err, capabilities.ErrNotApplied) {
		t.Errorf("over-limit write error %v is not marked not applied", err)
	}
	c := w.ClassifyError(err, capabilities.ErrorContext{})
	if c.Severity != capabilities.Critical || c.Kind != capabilities.KindLimitViolation || !strings.Contains(c.UserMessage, "180.00 A is outside the limits") {
		t.Errorf("limit violation classified %+v", c)
	}
	if _, ok := w.RetryPolicy().Next(capabilities.Attempt{Number: 1, Kind: c.Kind}, time.Now(), nil); ok {
		t.Error("the retry policy would retry a limit violation")
	}
	if sp, _ := p.Setpoint("BTS:MAG:Q1:CURRENT"); sp != 105 {
		t.Errorf("setpoint %g after a refused write", sp)
	}

	// Ambiguous: one value, several channels.
	rf := find(t, p, "RF cavity voltage")
	amb := stepWith("set the RF cavity voltage to 610", nil, rf)
	amb.WritesEnabled = true
	_, err = w.Execute(context.Background(), amb)
	if c := w.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Replanning || !errors.Is(err, plant.ErrAmbiguousWrite) {
		t.Errorf("ambiguous: %v classified %+v", err, c)
	}
	// values parameter for several channels.
	many := stepWith("", map[string]any{"values": map[string]any{"SR:RF:CAV1:VOLT": 610, "sr:rf:cav2:volt": 611}}, rf)
	many.WritesEnabled = true
	out, err = w.Execute(context.Background(), many)
	if err != nil || len(out.Values[0].Value.(plant.ChannelWriteResults).Writes) != 2 {
		t.Errorf("values parameter: %+v, %v", out, err)
	}
	// No value at all.
	none := stepWith("adjust the Q1 current", nil, chans)
	none.WritesEnabled = true
	if _, err := w.Execute(context.Background(), none); !errors.Is(err, plant.ErrAmbiguousWrite) {
		t.Errorf("no value: err = %v", err)
	}
	// Read-only channel.
	ro := stepWith("", map[string]any{"value": 1, "channels": []any{"SR:DCCT:CURRENT"}})
	ro.WritesEnabled = true
	// Refused when described (reason read_only), so nobody is asked.
	var roRefused *capabilities.ActionRefusedError
	if _, err := w.DescribeAction(ro); !errors.As(err, &roRefused) || roRefused.Reason != "read_only" || !strings.Contains(roRefused.Message, "read-only") {
		t.Errorf("describing a write to a read-only channel: %v", err)
	}
	_, err = w.Execute(context.Background(), ro)
	if c := w.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Critical || !errors.Is(err, plant.ErrNotWritable) {
		t.Errorf("read-only: %v classified %+v", err, c)
	}
	// A stuck device fails verification.
	p.InjectFaults(plant.Faults{StuckWrites: true})
	stuck := stepWith("", map[string]any{"value": 100}, chans)
	stuck.WritesEnabled = true
	_, err = w.Execute(context.Background(), stuck)
	if c := w.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Critical || !errors.Is(err, plant.ErrVerification) {
		t.Errorf("stuck write: %v classified %+v", err, c)
	}
	// A timeout is retriable and the retry succeeds.
	p.InjectFaults(plant.Faults{WriteTimeouts: 1})
	_, err = w.Execute(context.Background(), stuck)
	if c := w.ClassifyError(err, capabilities.ErrorContext{}); c.Severity != capabilities.Retriable {
		t.Errorf("write timeout classified %+v", c)
	}
	if _, err := w.Execute(context.Background(), stuck); err != nil {
		t.Errorf("retry after timeout: %v", err)
	}
}

// TestDemoQuestions runs each demo question through its capabilities the
// way an offline plan does (no parameters, only the task) and checks the
// facts appear in the summaries the responder prints.
func TestDemoQuestions(t *testing.T) {
	for _, q := range plant.Demo {
		t.Run(q.Question, func(t *testing.T) {
			p, _ := newPlant(t, plant.Config{})
			reg := capabilities.NewRegistry()
			if err := plant.Register(reg, p); err != nil {
				t.Fatal(err)
			}
			var entries []capabilities.ContextEntry
			var summaries []string
			for i, name := range q.Capabilities {
				c, ok := reg.Get(name)
				if !ok {
					t.Fatalf("no capability %s", name)
				}
				st := stepWith(q.Question, nil, entries...)
				st.WritesEnabled = q.NeedsWrites
				// A side effect is approved whenever writes are on (else refused first).
				if capabilities.HasSideEffects(c) && st.WritesEnabled != q.NeedsApproval {
					t.Errorf("%s requires approval = %v, want %v", name, st.WritesEnabled, q.NeedsApproval)
				}
				out, err := c.Execute(context.Background(), st)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, v := range out.Values {
					entries = append(entries, entry(t, v, fmt.Sprintf("k%d", i)))
					summaries = append(summaries, v.Summary)
				}
			}
			all := strings.Join(summaries, "\n")
			for _, f := range q.Facts {
				if !strings.Contains(all, f) {
					t.Errorf("fact %q missing from:\n%s", f, all)
				}
			}
		})
	}
}
