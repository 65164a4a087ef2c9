package state_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

func val(v float64) *float64 { return &v }

func change(target string, v *float64, unit string) state.RequestedChange {
	return state.RequestedChange{Target: target, Value: v, Unit: unit}
}

func act(changes ...capabilities.Change) capabilities.Action {
	return capabilities.Action{Capability: "channel_write", Changes: changes}
}

func TestPermits(t *testing.T) {
	q1 := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("the quadrupole Q1 current in the BTS line", val(105), "A")}}
	cav2 := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("the RF cavity 2 voltage", val(610), "kV")}}
	sector := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("the corrector 2 in sector 3", val(1.5), "A")}}
	two := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("Q1", val(105), "A"), change("Q2", val(98), "A")}}
	noValue := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("RF cavity 2", nil, "")}}
	both := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("the Q1 and Q2 currents", val(105), "A")}}
	cavities := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("cavities 1, 2 and 3", val(500), "kV")}}
	bare := state.Intent{Kind: state.IntentChange}
	unnamed := state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("it", val(105), "")}}
	opaque := capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Set BTS:MAG:Q1:CURRENT to 105 A", Parameters: map[string]any{"value": 105.0}}})
	opaqueWrong := capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Set BTS:MAG:Q1:CURRENT", Parameters: map[string]any{"value": 150}}})
	opaqueObjective := capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Set the BTS Q1 current to 0.105 kA"}})

	tests := []struct {
		name   string
		intent state.Intent
		action capabilities.Action
		want   error // nil, ErrNoChangeIntent or ErrIntentMismatch
		says   string
	}{
		{"read refuses", state.Intent{Kind: state.IntentRead}, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), state.ErrNoChangeIntent, "reads as read"},
		{"empty kind is a read", state.Intent{}, act(), state.ErrNoChangeIntent, "reads as read"},
		{"hypothetical refuses", state.Intent{Kind: state.IntentHypothetical}, act(), state.ErrNoChangeIntent, "hypothetical"},
		{"unknown kind refuses", state.Intent{Kind: "delete"}, act(), state.ErrNoChangeIntent, "delete"},
		{"the stated change", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"an int value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105, Unit: "A"}), nil, ""},
		{"a numeric string", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: " 105 ", Unit: "A"}), nil, ""},
		{"another value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 150.0, Unit: "A"}), state.ErrIntentMismatch, "would be set to 150 A, the user asked for 105 A"},
		{"another device number", q1, act(capabilities.Change{Target: "BTS:MAG:Q10:CURRENT", Value: 105.0, Unit: "A"}), state.ErrIntentMismatch, "Q1 is not its target"},
		{"another device", q1, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 105.0, Unit: "A"}), state.ErrIntentMismatch, "Q1 is not its target"},
		{"unit scaled", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 0.105, Unit: "kA"}), nil, ""},
		{"unit scaled wrong", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "mA"}), state.ErrIntentMismatch, "105 mA"},
		{"other dimension", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "V"}), state.ErrIntentMismatch, "105 V"},
		{"action without unit", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0}), nil, ""},
		{"cavity abbreviated", cav2, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: 610.0, Unit: "kV"}), nil, ""},
		{"cavity in MV", cav2, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: 0.61, Unit: "MV"}), nil, ""},
		{"another cavity", cav2, act(capabilities.Change{Target: "SR:RF:CAV1:VOLT", Value: 610.0, Unit: "kV"}), state.ErrIntentMismatch, "cavity 2 is not its target"},
		{"sector not in the name", sector, act(capabilities.Change{Target: "SR:HCM:COR2:CURRENT", Value: 1.5, Unit: "A"}), nil, ""},
		{"sector zero padded", sector, act(capabilities.Change{Target: "SR:C03:COR2", Value: 1.5, Unit: "A"}), nil, ""},
		{"another corrector", sector, act(capabilities.Change{Target: "SR:C03:COR4", Value: 1.5, Unit: "A"}), state.ErrIntentMismatch, "corrector 2"},
		{"two changes each right", two, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"},
			capabilities.Change{Target: "BTS:MAG:Q2:CURRENT", Value: 98.0, Unit: "A"}), nil, ""},
		{"two changes swapped", two, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 98.0, Unit: "A"},
			capabilities.Change{Target: "BTS:MAG:Q2:CURRENT", Value: 105.0, Unit: "A"}), state.ErrIntentMismatch, "98 A, the user asked for 105 A"},
		{"a third device", two, act(capabilities.Change{Target: "BTS:MAG:Q3:CURRENT", Value: 105.0, Unit: "A"}), state.ErrIntentMismatch, `"Q1" and "Q2"`},
		{"one of two named", both, act(capabilities.Change{Target: "BTS:MAG:Q2:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"not one of two named", both, act(capabilities.Change{Target: "BTS:MAG:Q3:CURRENT", Value: 105.0, Unit: "A"}), state.ErrIntentMismatch, "Q1"},
		{"listed numbers take the name", cavities, act(capabilities.Change{Target: "SR:RF:CAV3:VOLT", Value: 500.0, Unit: "kV"}), nil, ""},
		{"a number not listed", cavities, act(capabilities.Change{Target: "SR:RF:CAV4:VOLT", Value: 500.0, Unit: "kV"}), state.ErrIntentMismatch, "cavities 1"},
		{"no stated value: any value", noValue, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: "OFF"}), nil, ""},
		{"no stated value: target still checked", noValue, act(capabilities.Change{Target: "SR:RF:CAV3:VOLT", Value: "OFF"}), state.ErrIntentMismatch, "cavity 2"},
		{"string for a number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: "MAX"}), state.ErrIntentMismatch, `"MAX"`},
		{"bool for a number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: true}), state.ErrIntentMismatch, "true"},
		{"value not known yet", q1, act(capabilities.Change{Target: "Set BTS Q1"}), nil, ""},
		{"change without stated changes", bare, act(capabilities.Change{Target: "anything", Value: 1.0}), nil, ""},
		{"unnamed target", unnamed, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 105.0}), nil, ""},
		{"unnamed target wrong value", unnamed, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 106.0}), state.ErrIntentMismatch, "106"},
		{"opaque step action", q1, opaque, nil, ""},
		{"opaque step action wrong value", q1, opaqueWrong, state.ErrIntentMismatch, "150"},
		{"opaque objective value", q1, opaqueObjective, nil, ""},
		{"no changes in the action", q1, act(), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.intent.Permits(tt.action)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}
}

func TestParseQuantityAndStatedValue(t *testing.T) {
	for _, tt := range []struct {
		in   string
		v    float64
		unit string
		ok   bool
	}{
		{"105 A", 105, "A", true}, {"105A", 105, "A", true}, {"610kV", 610, "kV", true}, {"0.5 amps", 0.5, "A", true},
		{"-3.5e2 mA", -350, "mA", true}, {"12 and", 12, "", true}, {".5 kv", 0.5, "kV", true}, {"2 MV", 2, "MV", true},
		{"5 mv", 5, "", true}, {"3 Torr", 3, "Torr", true}, {"1e-9 torr", 1e-9, "Torr", true}, {"7 furlongs", 7, "", true},
		{"abc", 0, "", false}, {"", 0, "", false},
	} {
		v, u, ok := state.ParseQuantity(tt.in)
		if v != tt.v || u != tt.unit || ok != tt.ok {
			t.Errorf("ParseQuantity(%q) = %v %q %v, want %v %q %v", tt.in, v, u, ok, tt.v, tt.unit, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   string
		v    float64
		unit string
		ok   bool
	}{
		{"Set Q1 to 105 A", 105, "A", true}, {"set q1 from 92 to 105 amps", 105, "A", true}, {"put it at 3.5", 3.5, "", true},
		{"Q1 = 105A", 105, "A", true}, {"Q1 → 105 A", 105, "A", true}, {"set it at 10:30 to 5 A", 5, "A", true},
		{"Set Q1", 0, "", false}, {"raise Q1 by 5 A", 0, "", false}, {"go to the Q1 page", 0, "", false},
	} {
		v, u, ok := state.StatedValue(tt.in)
		if v != tt.v || u != tt.unit || ok != tt.ok {
			t.Errorf("StatedValue(%q) = %v %q %v, want %v %q %v", tt.in, v, u, ok, tt.v, tt.unit, tt.ok)
		}
	}
	for in, want := range map[string]string{"amps": "A", "kv": "kV", "mA": "mA", "MA": "MA", "kilovolts": "kV", "furlong": "furlong", " A ": "A"} {
		if got := state.CanonicalUnit(in); got != want {
			t.Errorf("CanonicalUnit(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIntentSummary(t *testing.T) {
	for _, tt := range []struct {
		i    state.Intent
		want string
	}{
		{state.Intent{}, "read"},
		{state.Intent{Kind: state.IntentHypothetical}, "hypothetical"},
		{state.Intent{Kind: state.IntentChange}, "change"},
		{state.Intent{Kind: state.IntentChange, Changes: []state.RequestedChange{change("Q1", val(105), "A"), change("", nil, "")}}, "change: Q1 to 105 A; (target not named)"},
	} {
		if got := tt.i.Summary(); got != tt.want {
			t.Errorf("Summary = %q, want %q", got, tt.want)
		}
	}
}
