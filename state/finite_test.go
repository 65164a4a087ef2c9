package state_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// Numbers that are not numbers (issue 26, part 7): ±Inf and NaN anywhere
// in a state — a plan's parameters, a change's value or tolerance, a
// reading, classification metadata, an intent's value, an approval's
// arguments, an artifact — never fail its encoding, so they never fail a
// turn; what is stored decodes into a state and holds no such number.

// spoil sets every float the state holds to bad, with probability p: float
// fields, floats held in interfaces (parameters, metadata, values) at any
// depth, and the floats behind pointers (an intent's value); a context
// entry's value becomes, now and then, JSON holding 1e400.
func spoil(r *rand.Rand, v reflect.Value, bad float64, p float64) int {
	n := 0
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if v.CanSet() && r.Float64() < p {
			v.SetFloat(bad)
			n++
		}
	case reflect.Int64, reflect.Uint8:
		// What the decoder refuses for reasons of its own: a negative
		// duration, an unknown severity.
		switch {
		case v.Type() == durationType && v.Int() < 0:
			v.SetInt(-v.Int())
		case v.Type() == severityType:
			v.SetUint(v.Uint() % uint64(capabilities.Fatal+1))
		}
	case reflect.Interface:
		if v.IsNil() {
			return 0
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Float64:
			if v.CanSet() && r.Float64() < p {
				v.Set(reflect.ValueOf(bad))
				n++
			}
		case reflect.Map, reflect.Slice, reflect.Pointer:
			n += spoil(r, e, bad, p)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			n += spoil(r, v.Elem(), bad, p)
		}
	case reflect.Struct:
		if v.Type() == timeType {
			return 0
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n += spoil(r, v.Field(i), bad, p)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type() == rawType {
			if v.CanSet() && r.Float64() < p/4 {
				v.SetBytes([]byte(`{"value":1e400}`)) // valid JSON, beyond a float64
			}
			return 0
		}
		for i := range v.Len() {
			n += spoil(r, v.Index(i), bad, p)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			if k := spoil(r, e, bad, p); k > 0 {
				v.SetMapIndex(it.Key(), e)
				n += k
			}
		}
	}
	return n
}

var (
	durationType = reflect.TypeFor[capabilities.Duration]()
	severityType = reflect.TypeFor[capabilities.Severity]()
)

// spoiledState is a random state (the filler's, seeded) whose floats are
// set to bad with probability p; one plan step, one intent value and one
// approval argument always hold bad, so every state has some.
func spoiledState(seed uint64, bad, p float64) state.State {
	f := &filler{r: rand.New(rand.NewPCG(seed, 26))}
	var s state.State
	f.fill(reflect.ValueOf(&s).Elem())
	spoil(f.r, reflect.ValueOf(&s).Elem(), bad, p)
	v := bad
	s.Turn.Task = &state.Task{Text: "Set Q1 to 1e400 A", Intent: intent.Intent{Kind: intent.KindChange,
		Changes: []intent.RequestedChange{{Target: "Q1", Value: &v, Unit: "A"}}}}
	step := state.PlanStep{Status: state.StepPending}
	step.Capability, step.ContextKey, step.Parameters = "set_q1", "q1", map[string]any{"value": bad, "ramp": []any{1.0, bad}}
	if s.Turn.Plan == nil {
		s.Turn.Plan = &state.Plan{}
	}
	s.Turn.Plan.Steps = append(s.Turn.Plan.Steps, step)
	s.Turn.PendingApproval = &state.Approval{ID: "a1", Kind: state.ApprovalStep, Arguments: map[string]any{"value": bad},
		Action: &capabilities.Action{Capability: "set_q1", Changes: []capabilities.Change{{Target: "Q1", Value: bad, Tolerance: bad}}},
		Before: []capabilities.Reading{{Target: "Q1", Value: bad}}}
	return s
}

// FuzzAppendJSONNonFinite: whatever ±Inf, NaN (or, from the fuzzer, any
// float) a state holds in its float-carrying fields, AppendJSON encodes it —
// as json.Marshal encodes capabilities.FiniteCopy of it — into JSON that
// decodes into a state holding only finite numbers whenever the same state
// with a finite number in those places decodes (the filler also makes
// states the decoder refuses for other reasons: negative durations, unknown
// severities), and that state encodes again. Times beyond year 9999, which
// the filler makes now and then, are the one thing the encoder may refuse.
func FuzzAppendJSONNonFinite(f *testing.F) {
	for i, bad := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), 1e308, 0} {
		f.Add(uint64(i), bad, uint8(255))
		f.Add(uint64(i+100), bad, uint8(64))
	}
	f.Fuzz(func(t *testing.T, seed uint64, bad float64, share uint8) {
		s := spoiledState(seed, bad, float64(share)/255)
		got, err := s.AppendJSON(nil)
		want, werr := json.Marshal(capabilities.FiniteCopy(&s))
		if werr != nil {
			if err == nil {
				t.Fatalf("json.Marshal of the finite copy fails (%v), AppendJSON does not", werr)
			}
			if !strings.Contains(werr.Error(), "year outside of range") {
				t.Fatalf("the finite copy does not encode: %v", werr)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendJSON: %v", err)
		}
		if !bytes.Equal(got, want) {
			at := 0
			for at < len(got) && at < len(want) && got[at] == want[at] {
				at++
			}
			t.Fatalf("AppendJSON differs from the finite copy's encoding at byte %d\n got …%s\nwant …%s",
				at, got[max(0, at-80):min(len(got), at+80)], want[max(0, at-80):min(len(want), at+80)])
		}
		control := spoiledState(seed, 1.5, float64(share)/255)
		cb, err := control.AppendJSON(nil)
		if err != nil || json.Unmarshal(cb, new(state.State)) != nil {
			return // refused for another reason than its numbers
		}
		var back state.State
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("the stored state does not decode: %v\n%.2000s", err, got)
		}
		if err := capabilities.CheckFinite(back); err != nil {
			t.Fatalf("the decoded state holds a number that is not finite: %v", err)
		}
		if _, err := back.AppendJSON(nil); err != nil {
			t.Fatalf("the decoded state does not encode: %v", err)
		}
	})
}

// TestAppendJSONNonFiniteForms: the stored form of each kind of position —
// a value of any type as the string "+Inf", "-Inf" or "NaN" (nothing reads
// it as a number again: a parameter so stored is not a number to write), a
// float field as the largest float of its sign or 0 — and the original
// state is left as it was.
func TestAppendJSONNonFiniteForms(t *testing.T) {
	inf, ninf, nan := math.Inf(1), math.Inf(-1), math.NaN()
	s := state.State{Turn: state.Turn{Number: 1, Input: "Set Q1 to 1e400 A",
		Task: &state.Task{Text: "Set Q1 to 1e400 A", Intent: intent.Intent{Kind: intent.KindChange,
			Changes: []intent.RequestedChange{{Target: "Q1", Value: &inf, Unit: "A"}}}},
		Plan: &state.Plan{Number: 1, Steps: []state.PlanStep{{PlannedStep: capabilities.PlannedStep{ContextKey: "q1", Capability: "set_q1",
			Parameters: map[string]any{"value": inf, "list": []any{ninf, 2.5}}}, Status: state.StepFailed,
			Error: &state.ErrorInfo{Node: "set_q1", Classification: capabilities.Classification{Severity: capabilities.Critical,
				Metadata: map[string]any{"reading": nan}}}}}},
		PendingApproval: &state.Approval{ID: "a1", Kind: state.ApprovalStep, Arguments: map[string]any{"value": ninf},
			Action: &capabilities.Action{Capability: "set_q1", Changes: []capabilities.Change{{Target: "Q1", Value: nan, Tolerance: inf}}},
			Before: []capabilities.Reading{{Target: "Q1", Value: inf}}},
		Results: []state.StepResult{{Capability: "read", Artifacts: []capabilities.Artifact{{Kind: capabilities.ArtifactTimeSeries,
			TimeSeries: &capabilities.TimeSeries{Series: []capabilities.Series{{Name: "Q1", TimesMs: []int64{1, 2}, Values: []float64{ninf, nan}}}}}}}},
	}}
	got, err := s.AppendJSON(nil)
	if err != nil {
		t.Fatalf("AppendJSON: %v", err)
	}
	for _, want := range []string{
		`"intent":{"kind":"change","changes":[{"target":"Q1","value":1.7976931348623157e+308,"unit":"A"}]}`,
		`"parameters":{"list":["-Inf",2.5],"value":"+Inf"}`,
		`"metadata":{"reading":"NaN"}`,
		`"arguments":{"value":"-Inf"}`,
		`"changes":[{"target":"Q1","value":"NaN","tolerance":1.7976931348623157e+308}]`,
		`"before":[{"target":"Q1","value":"+Inf"}]`,
		`"values":[-1.7976931348623157e+308,0]`,
	} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("stored state lacks %s:\n%s", want, got)
		}
	}
	var back state.State
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if v, err := capabilities.Param(capabilities.Step{PlannedStep: back.Turn.Plan.Steps[0].PlannedStep}, "value", 0.0); err == nil {
		t.Fatalf("the stored +Inf reads as the number %v", v)
	}
	if !math.IsInf(s.Turn.Plan.Steps[0].Parameters["value"].(float64), 1) || !math.IsNaN(s.Turn.PendingApproval.Action.Changes[0].Value.(float64)) {
		t.Fatal("encoding changed the state")
	}
	// An update (several steps run together) and an approval (an
	// interrupt's payload) encode too.
	u := state.Update{Step: &state.StepUpdate{Plan: 1, Step: s.Turn.Plan.Steps[0], Error: s.Turn.Plan.Steps[0].Error}}
	if b, err := u.AppendJSON([]byte("x")); err != nil || !bytes.Contains(b, []byte(`"value":"+Inf"`)) || !bytes.HasPrefix(b, []byte("x{")) {
		t.Fatalf("update: %s, %v", b, err)
	}
	if b, err := json.Marshal(s.Turn.PendingApproval); err != nil || !bytes.Contains(b, []byte(`"arguments":{"value":"-Inf"}`)) {
		t.Fatalf("approval: %s, %v", b, err)
	}
}

// A state whose numbers are all finite is encoded exactly as before: the
// finite copy is the state itself, and the bytes are json.Marshal's.
func TestAppendJSONFiniteUnchanged(t *testing.T) {
	for seed := range uint64(20) {
		s := spoiledState(seed, 105, 1)
		if capabilities.FiniteCopy(&s) != any(&s) {
			t.Fatalf("state %d: FiniteCopy copied a state without a number that is not finite", seed)
		}
		want, werr := json.Marshal(&s)
		got, err := s.AppendJSON(nil)
		if (werr != nil) != (err != nil) || !bytes.Equal(got, want) {
			t.Fatalf("state %d: AppendJSON = %s, %v; json.Marshal = %s, %v", seed, got, err, want, werr)
		}
	}
}
