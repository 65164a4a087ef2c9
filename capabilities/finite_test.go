package capabilities_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
)

var (
	inf, ninf, nan = math.Inf(1), math.Inf(-1), math.NaN()
)

// amps is a named float type, as an application may have.
type amps float64

type setting struct {
	Target string  `json:"target"`
	Level  amps    `json:"level"`
	Gain   float32 `json:"gain,omitempty"`
	Ramp   *float64
	Extra  any               `json:"extra,omitempty"`
	Skip   float64           `json:"-"`
	hidden float64           // json does not see it
	Table  map[string]any    `json:"table,omitempty"`
	Fixed  [2]float64        `json:"fixed"`
	Named  map[string]string `json:"named,omitempty"`
}

func TestCheckFiniteNamesWhere(t *testing.T) {
	r := inf
	for _, tc := range []struct {
		v    any
		want string // "" : finite
	}{
		{105.0, ""},
		{inf, "the value is +Inf"},
		{float32(nan), "the value is NaN"},
		{map[string]any{"b": 1.0, "a": []any{2.0, ninf}}, "a[1] is -Inf"},
		{map[string]any{"z": nan, "a": inf}, "a is +Inf"}, // keys in order
		{setting{Level: amps(ninf)}, "level is -Inf"},
		{setting{Ramp: &r}, "Ramp is +Inf"},
		{setting{Skip: nan, hidden: nan, Named: map[string]string{"x": "NaN"}}, ""},
		{setting{Fixed: [2]float64{1, nan}}, "fixed[1] is NaN"},
		{setting{Table: map[string]any{"rows": [][]any{{1.0}, {"x", inf}}}}, "table.rows[1][1] is +Inf"},
		{&setting{Extra: json.Number("1e400")}, "extra is 1e400"},
		{json.Number("1e308"), ""},
		{[]byte("1e400"), ""}, // bytes are not numbers
		{nil, ""},
	} {
		err := capabilities.CheckFinite(tc.v)
		var nf *capabilities.NonFiniteError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%#v: %v; want nil", tc.v, err)
		case tc.want != "" && (!errors.As(err, &nf) || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%#v: %v; want %q…", tc.v, err, tc.want)
		}
	}
}

// FiniteCopy writes each ±Inf and NaN as JSON can carry it — in an
// interface as text, in a float field as a float — copies only what it
// changes, and leaves its argument as it was.
func TestFiniteCopy(t *testing.T) {
	r := nan
	orig := setting{Target: "Q1", Level: amps(inf), Gain: float32(ninf), Ramp: &r, Extra: []any{1.0, inf, "x"},
		Table: map[string]any{"a": nan, "b": map[string]any{"c": ninf}, "d": 2.0}, Fixed: [2]float64{ninf, 3}}
	v := orig
	got, err := json.Marshal(capabilities.FiniteCopy(v))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"target":"Q1","level":1.7976931348623157e+308,"gain":-3.4028235e+38,"Ramp":0,"extra":[1,"+Inf","x"],` +
		`"table":{"a":"NaN","b":{"c":"-Inf"},"d":2},"fixed":[-1.7976931348623157e+308,3]}`
	if string(got) != want {
		t.Fatalf("encoded\n %s\nwant\n %s", got, want)
	}
	if !math.IsNaN(*v.Ramp) || !math.IsInf(float64(v.Level), 1) || !math.IsInf(v.Extra.([]any)[1].(float64), 1) ||
		!math.IsNaN(v.Table["a"].(float64)) || !math.IsInf(v.Table["b"].(map[string]any)["c"].(float64), -1) || !math.IsInf(v.Fixed[0], -1) {
		t.Fatalf("FiniteCopy changed its argument: %+v", v)
	}
	// Finite: the very value back, and MarshalFinite is json.Marshal.
	fine := map[string]any{"value": 105.0, "list": []any{1.0, "x"}}
	if reflect.ValueOf(capabilities.FiniteCopy(fine)).Pointer() != reflect.ValueOf(fine).Pointer() {
		t.Error("FiniteCopy copied a finite map")
	}
	a, err1 := capabilities.MarshalFinite(fine)
	b, err2 := json.Marshal(fine)
	if err1 != nil || err2 != nil || string(a) != string(b) {
		t.Errorf("MarshalFinite %s %v, json.Marshal %s %v", a, err1, b, err2)
	}
	// A non-empty interface cannot hold the text: it keeps a number.
	var e interface{ String() string } = stringer(inf)
	if got, err := json.Marshal(capabilities.FiniteCopy(struct{ E interface{ String() string } }{e})); err != nil || string(got) != `{"E":1.7976931348623157e+308}` {
		t.Errorf("non-empty interface: %s %v", got, err)
	}
	// What JSON refuses for another reason is refused still.
	if _, err := capabilities.MarshalFinite(map[string]any{"f": inf, "c": make(chan int)}); err == nil || !strings.Contains(err.Error(), "chan") {
		t.Errorf("a channel: %v", err)
	}
}

type stringer float64

func (s stringer) String() string { return "s" }

// The types that carry values of any type encode ±Inf and NaN as text,
// wherever they are encoded; finite ones as before.
func TestCarriersEncodeNonFinite(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{capabilities.Change{Target: "Q1", Value: inf, Unit: "A", Tolerance: nan}, `{"target":"Q1","value":"+Inf","unit":"A"}`},
		{capabilities.Change{Target: "Q1", Value: 105.0, Unit: "A", Tolerance: 0.5}, `{"target":"Q1","value":105,"unit":"A","tolerance":0.5}`},
		{capabilities.Reading{Target: "Q1", Value: ninf}, `{"target":"Q1","value":"-Inf"}`},
		{capabilities.Classification{Severity: capabilities.Critical, Metadata: map[string]any{"reading": nan}},
			`{"severity":"critical","metadata":{"reading":"NaN"}}`},
		{[]capabilities.Change{{Target: "<Q1>", Value: map[string]any{"v": inf}}}, `[{"target":"\u003cQ1\u003e","value":{"v":"+Inf"}}]`},
	} {
		got, err := json.Marshal(tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v: %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
}

// An action holding ±Inf or NaN is refused (ReasonNotFinite), naming the
// target and the value; DescribeAction applies it to every side-effecting
// capability — one that describes its action, one that does not
// (StepAction) — and returns the action as it can be recorded.
func TestDescribeActionRefusesNonFinite(t *testing.T) {
	value := 0.0
	described := capabilities.Define(capabilities.Definition{Name: "set_q1", Description: "Set Q1", SideEffects: true,
		Action: func(capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: "BTS:Q1", Value: value, Unit: "A"}}, Summary: "set Q1"}, nil
		},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	plain := capabilities.Define(capabilities.Definition{Name: "set_any", Description: "Set anything", SideEffects: true,
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	for _, bad := range []float64{inf, ninf, nan} {
		value = bad
		text := map[bool]string{true: "NaN", false: map[bool]string{true: "+Inf", false: "-Inf"}[bad > 0]}[math.IsNaN(bad)]
		a, err := capabilities.DescribeAction(described, capabilities.Step{})
		var refused *capabilities.ActionRefusedError
		if !errors.As(err, &refused) || refused.Reason != capabilities.ReasonNotFinite ||
			refused.Message != "The value for BTS:Q1 is "+text+", which is not a finite number, so nobody was asked and nothing was changed." {
			t.Fatalf("described %v: %v", bad, err)
		}
		if a.Capability != "set_q1" || a.Changes[0].Value != text || a.Summary != "set Q1" {
			t.Errorf("described %v: action %+v; want the value as text", bad, a)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Errorf("the refused action does not encode: %v", err)
		}
		st := capabilities.Step{PlannedStep: capabilities.PlannedStep{ContextKey: "q1", Parameters: map[string]any{"value": bad}}}
		a, err = capabilities.DescribeAction(plain, st)
		if !errors.As(err, &refused) || refused.Reason != capabilities.ReasonNotFinite || !strings.Contains(refused.Message, "The value for q1 holds "+text+" at parameters.value") {
			t.Fatalf("step action %v: %v", bad, err)
		}
		if !math.IsNaN(bad) && st.Parameters["value"] != bad {
			t.Error("DescribeAction changed the step's parameters")
		}
	}
	value = 105
	if a, err := capabilities.DescribeAction(described, capabilities.Step{}); err != nil || a.Changes[0].Value != 105.0 {
		t.Fatalf("a finite action: %+v, %v", a, err)
	}
	// A tolerance that is not finite is refused too.
	a := capabilities.Action{Capability: "x", Changes: []capabilities.Change{{Target: "Q1", Value: 1.0, Tolerance: inf}}}
	if err := a.Validate(); err == nil || !strings.Contains(err.Error(), "The tolerance for Q1 is +Inf") {
		t.Errorf("tolerance: %v", err)
	}
}

// A capability's own refusal stands (its reason, its words); its action
// still comes back in a form that can be recorded.
func TestDescribeActionKeepsTheCapabilitysRefusal(t *testing.T) {
	own := &capabilities.ActionRefusedError{Reason: "limits", Message: "+Inf A is outside the limits of Q1 (0–120 A)."}
	c := capabilities.Define(capabilities.Definition{Name: "set_q1", Description: "Set Q1", SideEffects: true,
		Action: func(capabilities.Step) (capabilities.Action, error) {
			return capabilities.Action{Changes: []capabilities.Change{{Target: "Q1", Value: inf}}}, own
		},
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	a, err := capabilities.DescribeAction(c, capabilities.Step{})
	if err != own || a.Changes[0].Value != "+Inf" {
		t.Fatalf("%+v, %v", a, err)
	}
}
