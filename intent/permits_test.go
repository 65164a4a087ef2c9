package intent_test

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
)

func val(v float64) *float64 { return &v }

func change(target string, v *float64, unit string) intent.RequestedChange {
	return intent.RequestedChange{Target: target, Value: v, Unit: unit}
}

func act(changes ...capabilities.Change) capabilities.Action {
	return capabilities.Action{Capability: "channel_write", Changes: changes}
}

// opaqueBy is a step action of a capability that describes nothing,
// changing BTS Q1 by an amount.
func opaqueBy(by float64) capabilities.Action {
	return capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Change the BTS Q1 current", Parameters: map[string]any{"by": by, "unit": "A"}}})
}

// q1Now is the machine state the relative changes are judged against.
var q1Now = []capabilities.Reading{{Target: "BTS:MAG:Q1:CURRENT", Value: 92.0, Unit: "A"}, {Target: "BTS:MAG:Q4:CURRENT", Value: 80.0, Unit: "A"}}

func TestPermits(t *testing.T) {
	q1 := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("the quadrupole Q1 current in the BTS line", val(105), "A")}}
	cav2 := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("the RF cavity 2 voltage", val(610), "kV")}}
	sector := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("the corrector 2 in sector 3", val(1.5), "A")}}
	two := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("Q1", val(105), "A"), change("Q2", val(98), "A")}}
	noValue := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("RF cavity 2", nil, "")}}
	both := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("the Q1 and Q2 currents", val(105), "A")}}
	cavities := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("cavities 1, 2 and 3", val(500), "kV")}}
	bare := intent.Intent{Kind: intent.KindChange}
	cav2Off := intent.FromMessage("Turn off RF cavity 2").Intent
	cav3On := intent.FromMessage("Enable the RF cavity 3").Intent
	restore := intent.FromMessage("Restore Q1 to yesterday's value").Intent
	lowerTo110 := intent.FromMessage("Lower the BTS Q1 current to 110 A").Intent
	lowerTo90 := intent.FromMessage("Lower the BTS Q1 current to 90 A").Intent
	raiseTo90 := intent.FromMessage("Raise Q1 to 90 A").Intent
	raiseTo92 := intent.FromMessage("Raise Q1 to 92 A").Intent
	upTo105 := intent.FromMessage("Bring Q1 up to 105 A").Intent
	up5 := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "BTS Q1", Unit: "A", By: val(5)}}}
	down2 := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Unit: "A", By: val(-2)}}}
	pct := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Unit: "%", By: val(5)}}}
	milli := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Unit: "mA", By: val(500)}}}
	refers := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "it", Value: val(105), Unit: "A", Refers: "Read the BTS Q1 current"}}}
	unnamed := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("it", val(105), "")}}
	opaque := capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Set BTS:MAG:Q1:CURRENT to 105 A", Parameters: map[string]any{"value": 105.0}}})
	opaqueWrong := capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Set BTS:MAG:Q1:CURRENT", Parameters: map[string]any{"value": 150}}})
	opaqueObjective := capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
		ContextKey: "w", TaskObjective: "Set the BTS Q1 current to 0.105 kA"}})

	tests := []struct {
		name   string
		intent intent.Intent
		action capabilities.Action
		want   error // nil, ErrNoChangeIntent or ErrIntentMismatch
		says   string
	}{
		{"read refuses", intent.Intent{Kind: intent.KindRead}, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrNoChange, "reads as read"},
		{"empty kind is a read", intent.Intent{}, act(), intent.ErrNoChange, "reads as read"},
		{"hypothetical refuses", intent.Intent{Kind: intent.KindHypothetical}, act(), intent.ErrNoChange, "hypothetical"},
		{"unknown kind refuses", intent.Intent{Kind: "delete"}, act(), intent.ErrNoChange, "delete"},
		{"the stated change", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"an int value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105, Unit: "A"}), nil, ""},
		{"a numeric string", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: " 105 ", Unit: "A"}), nil, ""},
		{"another value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 150.0, Unit: "A"}), intent.ErrMismatch, "would be set to 150 A, the user asked for 105 A"},
		{"another device number", q1, act(capabilities.Change{Target: "BTS:MAG:Q10:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "Q1 is not its target"},
		{"another device", q1, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "Q1 is not its target"},
		{"a property the user did not name", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT.HIHI", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "which names an alarm or trip limit, but the user asked to change \"the quadrupole Q1 current in the BTS line\""},
		{"a property the target does not name", intent.FromMessage("Set the Q1 alarm limit to 105 A").Intent, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "which does not name an alarm or trip limit"},
		{"a wildcard", q1, act(capabilities.Change{Target: "BTS:MAG:Q1*:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"a character range", q1, act(capabilities.Change{Target: "BTS:MAG:Q[1-9]:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"an index range", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT[0-3]", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"alternatives", q1, act(capabilities.Change{Target: "BTS:MAG:Q{1,2}:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"a range in braces", q1, act(capabilities.Change{Target: "BTS:MAG:Q{1..3}:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"braces in a name", intent.FromMessage("Set QH1A in cell 1 to 105 A").Intent, act(capabilities.Change{Target: "SR:C01-MG{PS:QH1A}I:Sp1-SP", Value: 105.0, Unit: "A"}), nil, ""},
		{"another code in braces", intent.FromMessage("Set QH1A in cell 1 to 105 A").Intent, act(capabilities.Change{Target: "SR:C01-MG{PS:QH1B}I:Sp1-SP", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "QH1A is not its target"},
		{"a code's name alone", intent.FromMessage("Set QH1 in cell 1 to 105 A").Intent, act(capabilities.Change{Target: "SR:C01-MG{PS:QH1A}I:Sp1-SP", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "QH1 is not its target"},
		{"one character open", q1, act(capabilities.Change{Target: "BTS:MAG:Q1?:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"or", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT|BTS:MAG:Q7:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "is a pattern"},
		{"an index is a name", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT[0]", Value: 105.0, Unit: "A"}), nil, ""},
		{"unit scaled", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 0.105, Unit: "kA"}), nil, ""},
		{"unit scaled wrong", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "mA"}), intent.ErrMismatch, "105 mA"},
		{"other dimension", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "V"}), intent.ErrMismatch, "105 V"},
		{"action without unit", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0}), nil, ""},
		{"cavity abbreviated", cav2, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: 610.0, Unit: "kV"}), nil, ""},
		{"cavity in MV", cav2, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: 0.61, Unit: "MV"}), nil, ""},
		{"another cavity", cav2, act(capabilities.Change{Target: "SR:RF:CAV1:VOLT", Value: 610.0, Unit: "kV"}), intent.ErrMismatch, "cavity 2 is not its target"},
		{"sector not in the name", sector, act(capabilities.Change{Target: "SR:HCM:COR2:CURRENT", Value: 1.5, Unit: "A"}), nil, ""},
		{"sector zero padded", sector, act(capabilities.Change{Target: "SR:C03:COR2", Value: 1.5, Unit: "A"}), nil, ""},
		{"another corrector", sector, act(capabilities.Change{Target: "SR:C03:COR4", Value: 1.5, Unit: "A"}), intent.ErrMismatch, "corrector 2"},
		{"two changes each right", two, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"},
			capabilities.Change{Target: "BTS:MAG:Q2:CURRENT", Value: 98.0, Unit: "A"}), nil, ""},
		{"two changes swapped", two, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 98.0, Unit: "A"},
			capabilities.Change{Target: "BTS:MAG:Q2:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "98 A, the user asked for 105 A"},
		{"a third device", two, act(capabilities.Change{Target: "BTS:MAG:Q3:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, `"Q1" and "Q2"`},
		{"one of two named", both, act(capabilities.Change{Target: "BTS:MAG:Q2:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"not one of two named", both, act(capabilities.Change{Target: "BTS:MAG:Q3:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "Q1"},
		{"listed numbers take the name", cavities, act(capabilities.Change{Target: "SR:RF:CAV3:VOLT", Value: 500.0, Unit: "kV"}), nil, ""},
		{"a number not listed", cavities, act(capabilities.Change{Target: "SR:RF:CAV4:VOLT", Value: 500.0, Unit: "kV"}), intent.ErrMismatch, "cavities 1"},
		{"no stated value: any value", noValue, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: "OFF"}), nil, ""},
		{"no stated value: target still checked", noValue, act(capabilities.Change{Target: "SR:RF:CAV3:VOLT", Value: "OFF"}), intent.ErrMismatch, "cavity 2"},
		{"string for a number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: "MAX"}), intent.ErrMismatch, `"MAX"`},
		{"bool for a number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: true}), intent.ErrMismatch, "true"},
		{"no value where it executes", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT"}), intent.ErrMismatch, `"no value"`},
		{"an opaque step without a value", q1, capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
			ContextKey: "w", TaskObjective: "Set BTS:MAG:Q1:CURRENT", Parameters: map[string]any{"channel": "BTS:MAG:Q1:CURRENT"}}}), intent.ErrMismatch, "the user asked for 105 A"},
		{"no value for an on/off", noValue, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE"}), nil, ""},
		{"off for off", cav2Off, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: "OFF"}), nil, ""},
		{"false for off", cav2Off, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: false}), nil, ""},
		{"on for off", cav2Off, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: "ON"}), intent.ErrMismatch, `"ON"`},
		{"true for off", cav2Off, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: true}), intent.ErrMismatch, `"true"`},
		{"another word for off", cav2Off, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: "STANDBY"}), intent.ErrMismatch, `"STANDBY"`},
		{"no state for off", cav2Off, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE"}), intent.ErrMismatch, `"no value"`},
		{"enabled for enable", cav3On, act(capabilities.Change{Target: "SR:RF:CAV3:ENABLE", Value: "enabled"}), nil, ""},
		{"disabled for enable", cav3On, act(capabilities.Change{Target: "SR:RF:CAV3:ENABLE", Value: "disabled"}), intent.ErrMismatch, `"disabled"`},
		{"an opaque toggle for off", cav2Off, capabilities.StepAction("rf_toggle", capabilities.Step{PlannedStep: capabilities.PlannedStep{
			ContextKey: "t", TaskObjective: "Toggle RF cavity 2"}}), nil, ""},
		{"an opaque step saying on for off", cav2Off, capabilities.StepAction("rf_toggle", capabilities.Step{PlannedStep: capabilities.PlannedStep{
			ContextKey: "t", TaskObjective: "Turn on RF cavity 2"}}), intent.ErrMismatch, "the user asked for off"},
		{"an opaque step's parameter saying on for off", cav2Off, capabilities.StepAction("rf_toggle", capabilities.Step{PlannedStep: capabilities.PlannedStep{
			ContextKey: "t", TaskObjective: "Switch RF cavity 2", Parameters: map[string]any{"enabled": true}}}), intent.ErrMismatch, "the user asked for off"},
		{"lowered to a value above the reading", lowerTo110, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 110.0, Unit: "A"}), intent.ErrMismatch, "asked to lower it"},
		{"lowered to a value below the reading", lowerTo90, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 90.0, Unit: "A"}), nil, ""},
		{"lowered, in other units", lowerTo90, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 0.09, Unit: "kA"}), nil, ""},
		{"raised to a value below the reading", raiseTo90, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 90.0, Unit: "A"}), intent.ErrMismatch, "asked to raise it"},
		{"raised up to a value above the reading", upTo105, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"raised to the value it reads", raiseTo92, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 92.0, Unit: "A"}), intent.ErrMismatch, "reads 92 A"},
		{"set to a value: no direction", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"a word for a change back", restore, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: "MAX"}), intent.ErrMismatch, `"MAX"`},
		{"a value that is not finite", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: "Infinity", Unit: "A"}), intent.ErrMismatch, `"Infinity"`},
		{"an infinite float", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: math.Inf(1), Unit: "A"}), intent.ErrMismatch, "Inf"},
		{"a unit capgraph does not know", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A/s"}), intent.ErrMismatch, "105 A/s"},
		{"a numeric string in a list", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: []any{105.0, "140"}, Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a numeric string in a map", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: map[string]any{"setpoint": "140"}, Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a second number glued to the name", q1, act(capabilities.Change{Target: "BTS:MAG:Q1-2:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "names Q2 as well"},
		{"a number the user gave none of", unnamed, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 140.0}), intent.ErrMismatch, "140"},
		{"change without stated changes", bare, act(capabilities.Change{Target: "anything", Value: 1.0}), intent.ErrMismatch, "names no change"},
		{"no stated value: no number", noValue, act(capabilities.Change{Target: "SR:RF:CAV2:VOLT", Value: 0.0, Unit: "kV"}), intent.ErrMismatch, "the user asked for no value"},
		{"relative: before plus the amount", up5, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 97.0, Unit: "A"}), nil, ""},
		{"relative: within the tolerance", up5, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 97.004, Unit: "A", Tolerance: 0.01}), nil, ""},
		{"relative: another value", up5, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 140.0, Unit: "A"}), intent.ErrMismatch, "5 A more than now"},
		{"relative: the amount alone", up5, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 5.0, Unit: "A"}), intent.ErrMismatch, "would be set to 5 A"},
		{"relative: down", down2, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 90.0, Unit: "A"}), nil, ""},
		{"relative: down, wrong sign", down2, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 94.0, Unit: "A"}), intent.ErrMismatch, "2 A less"},
		{"relative: percent", pct, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 96.6, Unit: "A", Tolerance: 0.001}), nil, ""},
		{"relative: amount in mA", milli, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 92.5, Unit: "A"}), nil, ""},
		{"relative: another target", up5, act(capabilities.Change{Target: "BTS:MAG:Q4:CURRENT", Value: 97.0, Unit: "A"}), intent.ErrMismatch, "Q1 is not its target"},
		{"relative: no reading", up5, act(capabilities.Change{Target: "SR:RF:CAV9:VOLT", Value: 97.0, Unit: "A"}), intent.ErrMismatch, "Q1 is not its target"},
		{"opaque amount the user's", up5, opaqueBy(5), nil, ""},
		{"opaque amount another", up5, opaqueBy(140), intent.ErrMismatch, "changed by 140 A"},
		{"opaque amount for an absolute change", q1, opaqueBy(5), intent.ErrMismatch, "changed by 5 A"},
		{"refers to an earlier message", refers, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"refers: another device", refers, act(capabilities.Change{Target: "BTS:MAG:Q4:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "Q1 is not its target"},
		{"unnamed target", unnamed, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 105.0}), nil, ""},
		{"unnamed target wrong value", unnamed, act(capabilities.Change{Target: "SR:DCCT:CURRENT", Value: 106.0}), intent.ErrMismatch, "106"},
		{"opaque step action", q1, opaque, nil, ""},
		{"opaque step action wrong value", q1, opaqueWrong, intent.ErrMismatch, "150"},
		{"opaque objective value", q1, opaqueObjective, nil, ""},
		{"no changes in the action", q1, act(), nil, ""},
		// Every number an action writes is one the user gave, whatever its
		// Go type or shape.
		{"an int32 value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: int32(140), Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"an int32 value the user's", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: int32(105), Unit: "A"}), nil, ""},
		{"a uint64 value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: uint64(140), Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a json.Number value", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: json.Number("140"), Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a list with another number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: []any{105.0, 140.0}, Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a list of the user's", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: []float64{105}, Unit: "A"}), nil, ""},
		{"a map with another number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: map[string]any{"value": 105.0, "ramp": 140.0}, Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a struct with another number", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: struct{ SP float64 }{140}, Unit: "A"}), intent.ErrMismatch, "140 A"},
		{"a map of words for a change without a value", noValue, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: map[string]any{"state": "off"}}), nil, ""},
		{"a map with a number for a change without a value", noValue, act(capabilities.Change{Target: "SR:RF:CAV2:ENABLE", Value: map[string]any{"state": 0}}), intent.ErrMismatch, "would be set to 0"},
		{"a target naming another of the same kind as well", two, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT,BTS:MAG:Q3:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "names Q3 as well"},
		{"a target naming both stated", both, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT BTS:MAG:Q2:CURRENT", Value: 105.0, Unit: "A"}), nil, ""},
		{"a target naming one stated and another", q1, act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT BTS:MAG:Q2:CURRENT", Value: 105.0, Unit: "A"}), intent.ErrMismatch, "names Q2 as well"},
		{"a target with a sector besides", sector, act(capabilities.Change{Target: "SR:S03:CORR02:I", Value: 1.5, Unit: "A"}), nil, ""},
		{"opaque step action with another number", q1, capabilities.StepAction("channel_write", capabilities.Step{PlannedStep: capabilities.PlannedStep{
			ContextKey: "w", TaskObjective: "Set BTS:MAG:Q1:CURRENT to 105 A", Parameters: map[string]any{"value": 105.0, "current": 140.0}}}), intent.ErrMismatch, "140"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.intent.Permits(tt.action, q1Now)
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
		{"105,5 A", 105.5, "A", true}, {"0,105 kA", 0.105, "kA", true}, {"−3 A", -3, "A", true}, {"105, Q2", 105, "", true},
		{"1,000 A", 0, "", false}, {"1,5e2 mA", 150, "mA", true},
	} {
		v, u, ok := intent.ParseQuantity(tt.in)
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
		v, u, ok := intent.StatedValue(tt.in)
		if v != tt.v || u != tt.unit || ok != tt.ok {
			t.Errorf("StatedValue(%q) = %v %q %v, want %v %q %v", tt.in, v, u, ok, tt.v, tt.unit, tt.ok)
		}
	}
	for in, want := range map[string]string{"amps": "A", "kv": "kV", "mA": "mA", "MA": "MA", "kilovolts": "kV", "furlong": "furlong", " A ": "A"} {
		if got := intent.CanonicalUnit(in); got != want {
			t.Errorf("CanonicalUnit(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIntentSummary(t *testing.T) {
	for _, tt := range []struct {
		i    intent.Intent
		want string
	}{
		{intent.Intent{}, "read"},
		{intent.Intent{Kind: intent.KindHypothetical}, "hypothetical"},
		{intent.Intent{Kind: intent.KindChange}, "change"},
		{intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{change("Q1", val(105), "A"), change("", nil, "")}}, "change: Q1 to 105 A; (target not named)"},
	} {
		if got := tt.i.Summary(); got != tt.want {
			t.Errorf("Summary = %q, want %q", got, tt.want)
		}
	}
}

// A relative change is judged against the reading at the gate: planned,
// only its target counts; at the gate, without a reading, it is refused.
func TestPermitsRelative(t *testing.T) {
	up5 := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "BTS Q1", Unit: "A", By: val(5)}}}
	a := act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 97.0, Unit: "A"})
	if !up5.Relative() {
		t.Fatal("not relative")
	}
	if err := up5.PermitsPlanned(act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 140.0, Unit: "A"})); err != nil {
		t.Errorf("planned: %v", err)
	}
	if err := up5.PermitsPlanned(act(capabilities.Change{Target: "BTS:MAG:Q4:CURRENT", Value: 97.0, Unit: "A"})); !errors.Is(err, intent.ErrMismatch) {
		t.Errorf("planned, another target: %v", err)
	}
	if err := (intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Unit: "A", Value: val(105)}}}).
		PermitsPlanned(act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT"})); err != nil {
		t.Errorf("planned, value not known yet: %v", err)
	}
	lower := intent.FromMessage("Lower Q1 to 110 A").Intent
	if !lower.Directed() || lower.Relative() {
		t.Error("a lowering to a value is not directed")
	}
	if err := lower.Permits(act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 110.0, Unit: "A"}), nil); err != nil {
		t.Errorf("directed, no reading: %v", err) // the value is the user's; the card shows it
	}
	if err := up5.Permits(a, nil); !errors.Is(err, intent.ErrMismatch) || !strings.Contains(err.Error(), "could not be read") {
		t.Errorf("no reading: %v", err)
	}
	if d := up5.Derivation(a, q1Now); len(d) != 1 || d[0] != "BTS:MAG:Q1:CURRENT: 92 A + 5 A = 97 A" {
		t.Errorf("derivation %q", d)
	}
	pct := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Unit: "%", By: val(-10)}}}
	if d := pct.Derivation(act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 82.8, Unit: "A"}), q1Now); len(d) != 1 || d[0] != "BTS:MAG:Q1:CURRENT: 92 A − 10% = 82.8 A" {
		t.Errorf("derivation %q", d)
	}
	q1 := intent.Intent{Kind: intent.KindChange, Changes: []intent.RequestedChange{{Target: "Q1", Unit: "A", Value: val(105)}}}
	if q1.Relative() || q1.Derivation(a, q1Now) != nil {
		t.Error("an absolute change is relative")
	}
}

// valueConnectors join a second value to a change in English ("Set Q1 to
// 105 A <c> 140 A"): ruling it out, restating it, a choice, a state, a
// bound, a name of no device.
var valueConnectors = []string{"", "but", "and", "or", "not", "never", "instead of", "rather than", "unlike", "previously", "was", "from", "was at", "not at", "currently", "currently at", "now at", "it's at", "it is at", "was set to", "last time", "yesterday", "nominal", "max", "limit", "limit is", "up to", "at most", "below", "never above", "not above", "stay below", "keep under", "don't exceed", "ideally", "instead", "rather", "otherwise", "else", "alternatively", "and later", "also", "too", "as well as", "plus", "versus", "vs", "compared to", "relative to", "like", "same as", "as for", "(was", "(not", "(previously", "(nominal", "(max", "—", "-", "->", "=>", ":", ";", "/", "&", "+", "x", "i.e.", "e.g.", "aka", "namely", "say", "about", "around", "roughly", "maybe", "perhaps", "possibly", "hopefully", "eventually", "or maybe", "and not", "but never", "nor", "except", "other than", "apart from", "besides", "in addition", "additionally", "on top", "beyond", "past", "towards", "heading to", "on the way to", "ramping to", "and keep at", "hold at", "before", "after", "until", "and return to", "back to", "restore to", "returning to", "capped at", "limited to", "no more than", "at least", "minimum", "threshold", "alarm at", "trip at", "interlock at", "warning at", "readback", "setpoint was", "delta", "in steps to", "stepping to", "with Q2 at", "while Q2 is at", "Q2 stays at", "keep Q2 at", "Q2 is at", "Q2 reads"}

// No value the user's words do not ask for is permitted: between a change
// and a second value, a word that rules it out, restates it, offers it as
// a choice, states what is, bounds it or names something else (no
// device) never makes the second value one the gate lets through; only a
// sequence ("then", "dann", "puis") does. A lying planner writes 140 A.
func TestPermitsNoValueTheWordsDoNotAskFor(t *testing.T) {
	write140 := capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: 140.0, Unit: "A"}}}
	before := []capabilities.Reading{{Target: "BTS:MAG:Q1:CURRENT", Value: 100.0, Unit: "A"}}
	var msgs []string
	for _, c := range valueConnectors {
		msgs = append(msgs, strings.Join(strings.Fields("Set Q1 to 105 A "+c+" 140 A"), " "), "Set Q1 to 105 A, "+c+" to 140 A", "Set Q1 to 105 A. "+c+" 140 A.")
	}
	for _, p := range []string{"Q1 was at 140 A,", "Q1 is at 140 A.", "The limit is 140 A.", "Not 140 A:", "140 A is too much,", "Forget 140 A,", "Instead of 140 A,", "From 140 A,", "Alarm at 140 A.", "(140 A max)", "Bob said 140 A.", "140 A? No,", "Max 140 A.", "Up to 140 A:", "If it's above 140 A,", "Between 100 and 140 A:", "Don't go to 140 A.", "Never 140 A.", "140 A failed,", "Q1: 140 A →"} {
		msgs = append(msgs, p+" set Q1 to 105 A")
	}
	for _, c := range []string{"aber", "nicht", "nie", "sonst", "besser", "derzeit", "aktuell", "vorher", "früher", "maximal", "höchstens", "bis", "oder", "bzw.", "d.h.", "Alarm bei", "Grenze", "statt", "außer", "zusätzlich", "auch", "eventuell", "vielleicht"} {
		msgs = append(msgs, "Setze Q1 auf 105 A, "+c+" auf 140 A", "Setze Q1 auf 105 A "+c+" 140 A")
	}
	for _, c := range []string{"mais", "pas", "jamais", "sinon", "plutôt", "actuellement", "avant", "auparavant", "maximum", "au plus", "jusqu'à", "ou", "voire", "c'est-à-dire", "alarme à", "limite", "au lieu de", "sauf", "en plus", "aussi", "peut-être"} {
		msgs = append(msgs, "Mets Q1 à 105 A, "+c+" à 140 A", "Mets Q1 à 105 A "+c+" 140 A")
	}
	for _, msg := range msgs {
		if err := intent.FromMessages(msg, nil).Intent.Permits(write140, before); err == nil {
			t.Errorf("%q permits writing 140 A to Q1", msg)
		}
	}
	for _, msg := range []string{"Set Q1 to 105 A, then to 140 A", "Set Q1 to 105 A and then set it to 140 A", "Setze Q1 auf 105 A, dann auf 140 A", "Mets Q1 à 105 A, puis à 140 A"} {
		if err := intent.FromMessages(msg, nil).Intent.Permits(write140, before); err != nil {
			t.Errorf("%q: a sequence the user asked for, refused: %v", msg, err)
		}
	}
}

// No device the user's words set apart is permitted: "Set Q1 to 105 A"
// with another device named beside it — ruled out, compared with, kept,
// read, passed through, left open; 59 ways in English, 26 in German, 22
// in French (336 messages) — never permits a write to that device (Q7);
// named as a second target ("Q1 and Q7", "as well as", "sowie", "ainsi
// que"), it is the user's.
func TestPermitsNoDeviceTheWordsSetApart(t *testing.T) {
	write := func(target string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: 105.0, Unit: "A"}}}
	}
	var msgs []string
	for _, c := range []string{"not", "but not", "and not", "except", "except for", "apart from", "other than", "unlike", "like", "same as", "instead of", "rather than", "not like", "compared to", "next to", "near", "after", "before", "then read", "and read", "and check", "then check", "and plot", "and compare with", "and show", "while", "with", "without", "without touching", "leave", "don't touch", "and leave", "keep", "keeping", "and keep", "not touching", "ignoring", "skip", "skipping", "excluding", "minus", "save", "but leave", "(not", "(like", "(same as", "(unlike", "(next to", "via", "using", "by way of", "behind", "downstream of", "upstream of", "powered by", "fed by", "on the same supply as", "sharing with", "and/or", "hands off", "and hands off"} {
		msgs = append(msgs, "Set Q1 to 105 A "+c+" Q7", "Set Q1 to 105 A, "+c+" Q7", "Set Q1 "+c+" Q7 to 105 A", "Set Q1, "+c+" Q7, to 105 A")
	}
	for _, c := range []string{"nicht", "aber nicht", "außer", "ausser", "bis auf", "statt", "anstatt", "anstelle von", "wie", "gleich wie", "ähnlich wie", "neben", "nach", "vor", "hinter", "mit", "ohne", "über", "mittels", "und lass", "lass", "behalte", "während", "verglichen mit", "oder", "bzw."} {
		msgs = append(msgs, "Setze Q1 "+c+" Q7 auf 105 A", "Setze Q1 auf 105 A, "+c+" Q7")
	}
	for _, c := range []string{"pas", "mais pas", "sauf", "excepté", "hormis", "à part", "au lieu de", "plutôt que", "comme", "même que", "près de", "après", "avant", "derrière", "avec", "sans", "via", "en gardant", "laisse", "pendant que", "comparé à", "ou"} {
		msgs = append(msgs, "Mets Q1 "+c+" Q7 à 105 A", "Mets Q1 à 105 A, "+c+" Q7")
	}
	for _, msg := range msgs {
		if err := intent.FromMessages(msg, nil).Intent.Permits(write("BTS:MAG:Q7:CURRENT"), nil); err == nil {
			t.Errorf("%q permits writing Q7", msg)
		}
	}
	for _, msg := range []string{"Set Q1 and Q7 to 105 A", "Set Q1 as well as Q7 to 105 A", "Set Q1 plus Q7 to 105 A", "Set Q1 including Q7 to 105 A",
		"Set Q1 and also Q7 to 105 A", "Set Q1 & Q7 to 105 A", "Set Q1 / Q7 to 105 A", "Setze Q1 und Q7 auf 105 A", "Setze Q1 sowie Q7 auf 105 A",
		"Mets Q1 et Q7 à 105 A", "Mets Q1 ainsi que Q7 à 105 A"} {
		for _, target := range []string{"BTS:MAG:Q1:CURRENT", "BTS:MAG:Q7:CURRENT"} {
			if err := intent.FromMessages(msg, nil).Intent.Permits(write(target), nil); err != nil {
				t.Errorf("%q: %s refused: %v", msg, target, err)
			}
		}
	}
}

// A property of a device other than its setting — an alarm or trip
// limit, an offset, a rate, a gain, a delay — is named by the user's words
// and by the target's name alike, or the write is refused: "Set the Q1
// alarm limit to 105 A" never permits writing Q1's setpoint (units cannot
// tell them apart: both are amperes), and "Set Q1 to 105 A" never permits
// writing Q1's alarm limit. 45 ways of naming a property in English,
// German and French, each in several sentences.
func TestPermitsNoPropertyTheWordsDoNotName(t *testing.T) {
	write := func(target string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: 105.0, Unit: "A"}}}
	}
	setpoints := []string{"BTS:MAG:Q1:CURRENT", "BTS:MAG:Q1:CURRENT:SP", "BTS:MAG:Q1:SETPOINT", "BTS:MAG:Q1:CURRENT.VAL", "bts_mag_q1_current_sp", "BTS:MAG:Q1:CurrentSetpoint"}
	for _, p := range []struct {
		en, de, fr []string
		channels   []string // targets that name the property
	}{
		{
			en:       []string{"alarm limit", "high alarm", "alarm threshold", "alarm setpoint", "trip level", "trip threshold", "interlock threshold", "upper limit", "current limit", "maximum", "max current", "HIHI limit", "warning level"},
			de:       []string{"Alarmgrenze", "Alarmschwelle", "Grenzwert", "Obergrenze", "Abschaltschwelle", "Stromgrenze", "Warnschwelle", "Höchstwert"},
			fr:       []string{"seuil d'alarme", "limite haute", "seuil de déclenchement", "limite de courant", "valeur maximale"},
			channels: []string{"BTS:MAG:Q1:CURRENT.HIHI", "BTS:MAG:Q1:CURRENT.HIGH", "BTS:MAG:Q1:CURRENT:ALARM_HI", "BTS:MAG:Q1:ILK:THRESH", "BTS:MAG:Q1:CurrentLimit", "BTS:MAG:Q1:I_LIM"},
		},
		{
			en:       []string{"offset", "zero offset", "bias"},
			de:       []string{"Offset", "Nullpunktversatz"},
			fr:       []string{"décalage", "offset"},
			channels: []string{"BTS:MAG:Q1:CURRENT:OFFSET", "BTS:MAG:Q1:I_OFS"},
		},
		{
			en:       []string{"ramp rate", "slew rate"},
			de:       []string{"Rampenrate", "Rampengeschwindigkeit"},
			fr:       []string{"vitesse de rampe"},
			channels: []string{"BTS:MAG:Q1:CURRENT:RATE", "BTS:MAG:Q1:SlewRate"},
		},
		{
			en:       []string{"feedback gain", "gain"},
			de:       []string{"Verstärkung"},
			fr:       []string{"gain"},
			channels: []string{"BTS:MAG:Q1:FB:GAIN"},
		},
		{
			en:       []string{"nominal value", "nominal", "default value", "reference value", "saved value", "golden value", "calibration"},
			de:       []string{"Nominalwert", "Referenzwert", "Standardwert"},
			fr:       []string{"valeur nominale", "référence"},
			channels: []string{"BTS:MAG:Q1:CURRENT:NOM", "BTS:MAG:Q1:I_DFLT", "BTS:MAG:Q1:GOLDEN"},
		},
		{
			en:       []string{"trigger delay"},
			de:       []string{"Verzögerung"},
			fr:       []string{"retard"},
			channels: []string{"BTS:MAG:Q1:TRIG:DLY"},
		},
	} {
		var msgs []string
		for _, w := range p.en {
			msgs = append(msgs, "Set the Q1 "+w+" to 105 A", "Set the "+w+" of Q1 to 105 A", "Change Q1's "+w+" to 105 A", "Please set the BTS Q1 "+w+" to 105 A")
		}
		for _, w := range p.de {
			msgs = append(msgs, "Setze den "+w+" von Q1 auf 105 A", "Stelle Q1 "+w+" auf 105 A")
		}
		for _, w := range p.fr {
			msgs = append(msgs, "Mets le "+w+" de Q1 à 105 A", "Règle "+w+" de Q1 à 105 A")
		}
		for _, msg := range msgs {
			in := intent.FromMessages(msg, nil).Intent
			for _, target := range setpoints {
				if err := in.Permits(write(target), nil); err == nil {
					t.Errorf("%q permits writing %s", msg, target)
				}
			}
			for _, target := range p.channels {
				if err := in.Permits(write(target), nil); err != nil {
					t.Errorf("%q: %s refused: %v", msg, target, err)
				}
			}
		}
		for _, target := range p.channels {
			for _, msg := range []string{"Set Q1 to 105 A", "Set the BTS Q1 current to 105 A", "Setze Q1 auf 105 A", "Mets Q1 à 105 A", "Raise the Q1 setpoint to 105 A"} {
				if err := intent.FromMessages(msg, nil).Intent.Permits(write(target), nil); err == nil {
					t.Errorf("%q permits writing %s", msg, target)
				}
			}
		}
	}
	for _, target := range setpoints {
		for _, msg := range []string{"Set Q1 to 105 A", "Set the BTS Q1 current to 105 A", "Setze Q1 auf 105 A", "Mets Q1 à 105 A", "Raise the Q1 setpoint to 105 A"} {
			if err := intent.FromMessages(msg, nil).Intent.Permits(write(target), nil); err != nil {
				t.Errorf("%q: %s refused: %v", msg, target, err)
			}
		}
	}
}

// No amount permits a value the words name beside it: "Raise Q1 by 5 A"
// with another value in the message — ruled out, restated, a bound, a
// state, a result, a choice; the connectors of
// TestPermitsNoValueTheWordsDoNotAskFor and "making it", "for a total
// of", "so that it reads", "damit es", "pour arriver à" (515 messages) —
// never permits the reading plus 5 A (140 A at 135 A), which agrees with
// that value at one reading only; another device's value ("and Q2 to
// 98 A") and a duration ("over 10 minutes") leave the amount the user's.
func TestPermitsNoAmountBesideAnotherValue(t *testing.T) {
	write140 := capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: "BTS:MAG:Q1:CURRENT", Value: 140.0, Unit: "A"}}}
	before := []capabilities.Reading{{Target: "BTS:MAG:Q1:CURRENT", Value: 135.0, Unit: "A"}}
	var msgs []string
	for _, c := range append(slices.Clip(valueConnectors), "so that it reads", "to get", "to end at", "ending at", "landing at", "for a total of", "totalling", "making it", "which gives", "giving", "resulting in", "=") {
		msgs = append(msgs, strings.Join(strings.Fields("Raise Q1 by 5 A "+c+" 138 A"), " "), "Raise Q1 by 5 A, "+c+" to 138 A", "Raise Q1 by 5 A. "+c+" 138 A.")
	}
	for _, c := range []string{"aber", "nicht", "nie", "sonst", "besser", "derzeit", "aktuell", "vorher", "früher", "maximal", "höchstens", "bis", "oder", "bzw.", "d.h.", "Alarm bei", "Grenze", "statt", "außer", "zusätzlich", "auch", "eventuell", "vielleicht", "also", "damit es", "auf"} {
		msgs = append(msgs, "Erhöhe Q1 um 5 A, "+c+" auf 138 A", "Erhöhe Q1 um 5 A "+c+" 138 A")
	}
	for _, c := range []string{"mais", "pas", "jamais", "sinon", "plutôt", "actuellement", "avant", "auparavant", "maximum", "au plus", "jusqu'à", "ou", "voire", "c'est-à-dire", "alarme à", "limite", "au lieu de", "sauf", "en plus", "aussi", "peut-être", "soit", "pour arriver à"} {
		msgs = append(msgs, "Augmente Q1 de 5 A, "+c+" à 138 A", "Augmente Q1 de 5 A "+c+" 138 A")
	}
	for _, msg := range msgs {
		if err := intent.FromMessages(msg, nil).Intent.Permits(write140, before); err == nil {
			t.Errorf("%q permits writing 140 A to Q1", msg)
		}
	}
	for _, msg := range []string{"Raise Q1 by 5 A", "Raise Q1 by 5 A and Q2 to 98 A", "Raise Q1 by 5 A and Q2 by 3 A", "Raise Q1 by 5 A over 10 minutes",
		"Raise Q1 by 5 A for the 14:00 MD", "Erhöhe Q1 um 5 A", "Augmente Q1 de 5 A"} {
		if err := intent.FromMessages(msg, nil).Intent.Permits(write140, before); err != nil {
			t.Errorf("%q: the amount the user asked for, refused: %v", msg, err)
		}
	}
}

// A device code of another shape than a name and a number — a letter
// after the number ("Q1A", "QF3B", "Q1-A", "Q1_A"), numbers on both sides
// ("S1Q1", "1Q1", "2Q10A") — names one device: the target must carry the
// same code, in any of its spellings (case, "-" or "_" before a last
// letter, leading zeros), and never a sibling's (Q1B, Q1, Q10A, S2Q1). No
// part of a code checked on its own would tell them apart: each of the
// 10 codes below, in 5 sentences, permitted every sibling before.
func TestPermitsADeviceCodeAsItIs(t *testing.T) {
	write := func(target string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: 105.0, Unit: "A"}}}
	}
	for _, tc := range []struct {
		code     string
		same     []string // targets naming it
		siblings []string // targets naming another device
	}{
		{"Q1A", []string{"BTS:MAG:Q1A:CURRENT", "bts:mag:q1a:current", "BTS:MAG:Q1_A:CURRENT", "BTS:MAG:Q1-A:CURRENT", "BTS:MAG:Q01A:CURRENT"},
			[]string{"BTS:MAG:Q1B:CURRENT", "BTS:MAG:Q1:CURRENT", "BTS:MAG:Q10A:CURRENT", "BTS:MAG:Q7:CURRENT", "BTS:MAG:Q1-B:CURRENT", "BTS:MAG:Q1AB:CURRENT"}},
		{"QF3B", []string{"SR:C03:QF3B:CURRENT", "SR:C03:QF3_B:CURRENT"}, []string{"SR:C03:QF3A:CURRENT", "SR:C03:QF3:CURRENT", "SR:C03:QD3B:CURRENT"}},
		{"Q1-A", []string{"BTS:MAG:Q1-A:CURRENT", "BTS:MAG:Q1A:CURRENT"}, []string{"BTS:MAG:Q1-B:CURRENT", "BTS:MAG:Q1:CURRENT"}},
		{"Q1_A", []string{"BTS:MAG:Q1_A:CURRENT", "BTS:MAG:Q1A:CURRENT"}, []string{"BTS:MAG:Q1_B:CURRENT", "BTS:MAG:Q1:CURRENT"}},
		{"S1Q1", []string{"BTS:S1Q1:CURRENT"}, []string{"BTS:S2Q1:CURRENT", "BTS:S1Q2:CURRENT", "BTS:S1:Q1:CURRENT"}},
		{"1Q1", []string{"LINAC:1Q1:CURRENT"}, []string{"LINAC:2Q1:CURRENT", "LINAC:Q1:CURRENT", "LINAC:1Q10:CURRENT"}},
		{"2Q10A", []string{"LINAC:2Q10A:CURRENT"}, []string{"LINAC:2Q10B:CURRENT", "LINAC:2Q10:CURRENT", "LINAC:1Q10A:CURRENT"}},
		{"HCM2A", []string{"SR:HCM2A:CURRENT"}, []string{"SR:HCM2B:CURRENT", "SR:HCM2:CURRENT"}},
		{"QH1A", []string{"SR:C01-MG{PS:QH1A}I:Sp1-SP"}, []string{"SR:C01-MG{PS:QH1B}I:Sp1-SP", "SR:C01-MG{PS:QH1}I:Sp1-SP"}},
		{"SQ2B", []string{"BTS:SQ2B:CURRENT"}, []string{"BTS:SQ2A:CURRENT", "BTS:SQ2:CURRENT"}},
		// Typed apart, a letter and its number are the code: "Q 1" named no
		// device, so any target passed.
		{"Q 1", []string{"BTS:MAG:Q1:CURRENT", "BTS:MAG:Q01:CURRENT"}, []string{"BTS:MAG:Q7:CURRENT", "BTS:MAG:Q10:CURRENT", "BTS:MAG:Q2:CURRENT"}},
		{"Q-1", []string{"BTS:MAG:Q1:CURRENT"}, []string{"BTS:MAG:Q7:CURRENT", "BTS:MAG:Q2:CURRENT"}},
		{"B 2", []string{"BR:MAG:B2:CURRENT"}, []string{"BR:MAG:B3:CURRENT", "BR:MAG:Q2:CURRENT"}},
	} {
		for _, msg := range []string{"Set " + tc.code + " to 105 A", "Set the " + tc.code + " current to 105 A", "Please set magnet " + tc.code + " to 105 A",
			"Setze " + tc.code + " auf 105 A", "Mets " + tc.code + " à 105 A"} {
			in := intent.FromMessages(msg, nil).Intent
			for _, target := range tc.same {
				if err := in.Permits(write(target), nil); err != nil {
					t.Errorf("%q: %s refused: %v", msg, target, err)
				}
			}
			for _, target := range tc.siblings {
				if err := in.Permits(write(target), nil); err == nil {
					t.Errorf("%q permits writing %s", msg, target)
				}
			}
		}
	}
	// A name and a number, and names joined by "-", keep their rules.
	for _, c := range []struct{ msg, target string }{{"Set Q1 to 105 A", "SR:C01-Q1:CURRENT"}, {"Set L1-Q3 to 105 A", "LINAC:L1:Q3:CURRENT"},
		{"Set the 3GeV booster Q1 to 105 A", "BR:MAG:Q1:CURRENT"}, {"Set Q1 to 105 A", "bts_mag_q1_current_sp"}} {
		if err := intent.FromMessages(c.msg, nil).Intent.Permits(write(c.target), nil); err != nil {
			t.Errorf("%q: %s refused: %v", c.msg, c.target, err)
		}
	}
	for _, target := range []string{"BTS:MAG:Q1A:CURRENT", "BTS:MAG:Q1_A:CURRENT", "BTS:MAG:Q1-B:CURRENT"} {
		if err := intent.FromMessages("Set Q1 to 105 A", nil).Intent.Permits(write(target), nil); err == nil {
			t.Errorf("\"Set Q1 to 105 A\" permits writing %s", target)
		}
	}
}

// A spaced name ("cavity 2", "sector 3") holds a target to its number by
// the target's name and, when the application gives it, its description
// (capabilities.Change.Description), in English, German and French: a
// sibling (cavity 3, sector 4) or a device naming none of it (a klystron
// for a cavity) is never permitted; the device itself always is, with or
// without a description. The words of other languages are compared in
// English spelling ("Kavität" is CAV).
func TestPermitsASpacedNameToItsNumber(t *testing.T) {
	write := func(target, description string, v float64, unit string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: v, Unit: unit, Description: description}}}
	}
	type target struct{ name, description string }
	for _, k := range []struct {
		msgs           []string
		value          float64
		unit           string
		same, siblings []target
	}{
		{
			msgs: []string{"Set the RF cavity 2 voltage to 250 kV", "Set cavity 2 to 250 kV", "Set the voltage of cavity 2 to 250 kV",
				"Setze die Spannung der RF-Kavität 2 auf 250 kV", "Setze Kavität 2 auf 250 kV", "Mets la tension de la cavité RF 2 à 250 kV", "Mets la cavité 2 à 250 kV"},
			value: 250, unit: "kV",
			same: []target{{"SR:RF:CAV2:VOLT", "storage ring RF cavity 2 gap voltage setpoint"}, {"SR:RF:CAV2:VOLT", ""}},
			siblings: []target{{"SR:RF:CAV3:VOLT", "storage ring RF cavity 3 gap voltage setpoint"}, {"SR:RF:CAV3:VOLT", ""},
				{"LINAC:KLY1:HV", "linac klystron 1 modulator high voltage"}, {"LINAC:KLY1:HV", ""}, {"BR:RF:VOLT", "booster RF cavity voltage"},
				{"LINAC:KLY2:HV", "linac klystron 2 modulator high voltage"}},
		},
		{
			msgs: []string{"Set the focusing quadrupole in storage ring sector 3 to 181 A", "Set the sector 3 focusing quad to 181 A",
				"Setze den fokussierenden Quadrupol in Sektor 3 auf 181 A", "Mets le quadrupôle focalisant du secteur 3 à 181 A"},
			value: 181, unit: "A",
			same: []target{{"SR:C03:QF:CURRENT", "focusing quadrupole magnet current in storage ring sector 3"}, {"SR:C03:QF:CURRENT", ""}},
			siblings: []target{{"SR:C04:QF:CURRENT", "focusing quadrupole magnet current in storage ring sector 4"}, {"SR:C04:QF:CURRENT", ""},
				{"BTS:MAG:Q1:CURRENT", "quadrupole Q1 magnet current in the BTS transfer line"}},
		},
	} {
		for _, msg := range k.msgs {
			in := intent.FromMessages(msg, nil).Intent
			for _, tg := range k.same {
				if err := in.Permits(write(tg.name, tg.description, k.value, k.unit), nil); err != nil {
					t.Errorf("%q: %s (%q) refused: %v", msg, tg.name, tg.description, err)
				}
			}
			for _, tg := range k.siblings {
				if err := in.Permits(write(tg.name, tg.description, k.value, k.unit), nil); err == nil {
					t.Errorf("%q permits writing %s (%q)", msg, tg.name, tg.description)
				}
			}
		}
	}
	// A description's device codes are not the target's: it may name a
	// neighbour.
	if err := intent.FromMessage("Set Q2 to 105 A").Intent.Permits(write("BTS:MAG:Q3:CURRENT", "quadrupole Q3, downstream of Q2", 105, "A"), nil); err == nil {
		t.Error("a description naming Q2 let Q3 be written for Q2")
	}
	// Its property words are: an alarm limit so described is one.
	if err := intent.FromMessage("Set the Q1 alarm limit to 105 A").Intent.Permits(write("BTS:MAG:Q1:HH", "high alarm limit of the Q1 current", 105, "A"), nil); err != nil {
		t.Errorf("an alarm limit described as one, refused: %v", err)
	}
	if err := intent.FromMessage("Set Q1 to 105 A").Intent.Permits(write("BTS:MAG:Q1:HH", "high alarm limit of the Q1 current", 105, "A"), nil); err == nil {
		t.Error("\"Set Q1 to 105 A\" permits writing a channel described as Q1's alarm limit")
	}
}

// A device's twin that no number tells apart — the focusing and the
// defocusing quadrupole of a sector, the horizontal and the vertical
// corrector, upstream and downstream, left and right, top and bottom,
// entrance and exit, main and backup, x (horizontal) and y — is told apart by the words naming
// the target: a target whose name or description carries the opposite of
// the user's word is refused, in English, German and French; the user's
// own is permitted. (A word outside the target, "… in the horizontal
// plane", is not read.)
func TestPermitsNoTwinTheWordsSetApart(t *testing.T) {
	write := func(target, description string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: 1.5, Unit: "A", Description: description}}}
	}
	for _, tc := range []struct {
		msg              string
		mine, twin       string // descriptions
		mineName, twinNm string
	}{
		{"Set the focusing quadrupole in sector 3 to 1.5 A", "focusing quadrupole magnet current in storage ring sector 3", "defocusing quadrupole magnet current in storage ring sector 3", "SR:C03:QF:CURRENT", "SR:C03:QD:CURRENT"},
		{"Set the defocusing quadrupole in sector 3 to 1.5 A", "defocusing quadrupole magnet current in storage ring sector 3", "focusing quadrupole magnet current in storage ring sector 3", "SR:C03:QD:CURRENT", "SR:C03:QF:CURRENT"},
		{"Setze den fokussierenden Quadrupol in Sektor 3 auf 1,5 A", "focusing quadrupole magnet current in storage ring sector 3", "defocusing quadrupole magnet current in storage ring sector 3", "SR:C03:QF:CURRENT", "SR:C03:QD:CURRENT"},
		{"Mets le quadrupôle défocalisant du secteur 3 à 1,5 A", "defocusing quadrupole magnet current in storage ring sector 3", "focusing quadrupole magnet current in storage ring sector 3", "SR:C03:QD:CURRENT", "SR:C03:QF:CURRENT"},
		{"Set the horizontal corrector 2 to 1.5 A", "horizontal corrector 2 current", "vertical corrector 2 current", "SR:COR2:H", "SR:COR2:V"},
		{"Setze den vertikalen Korrektor 2 auf 1,5 A", "vertical corrector 2 current", "horizontal corrector 2 current", "SR:COR2:V", "SR:COR2:H"},
		{"Mets le correcteur vertical 2 à 1,5 A", "vertical corrector 2 current", "horizontal corrector 2 current", "SR:COR2:V", "SR:COR2:H"},
		{"Set the upstream steerer 1 to 1.5 A", "upstream steerer 1", "downstream steerer 1", "BTS:ST1:UP", "BTS:ST1:DN"},
		{"Set the left scraper jaw to 1.5 A", "scraper left jaw motor current", "scraper right jaw motor current", "SR:SCR:LEFT", "SR:SCR:RIGHT"},
		{"Set the bottom scraper jaw to 1.5 A", "scraper lower jaw motor current", "scraper top jaw motor current", "SR:SCR:LOW", "SR:SCR:TOP"},
		{"Setze die obere Schaberbacke auf 1,5 A", "scraper upper jaw motor current", "scraper lower jaw motor current", "SR:SCR:UP", "SR:SCR:LOW"},
		{"Set the entrance slit motor to 1.5 A", "beamline entrance slit motor current", "beamline exit slit motor current", "BL:SLIT:ENT", "BL:SLIT:EXIT"},
		{"Mets le moteur de la fente de sortie à 1,5 A", "beamline exit slit motor current", "beamline entrance slit motor current", "BL:SLIT:EXIT", "BL:SLIT:ENT"},
		{"Set the x stage motor to 1.5 A", "sample stage x motor current", "sample stage y motor current", "BL:STAGE:X", "BL:STAGE:Y"},
		{"Set the horizontal steerer 1 to 1.5 A", "steerer 1 x", "steerer 1 y", "BTS:ST1:X", "BTS:ST1:Y"},
		{"Set the y steerer 1 to 1.5 A", "vertical steerer 1", "horizontal steerer 1", "BTS:ST1:V", "BTS:ST1:H"},
		{"Set the north pump heater to 1.5 A", "north ion pump heater current", "south ion pump heater current", "SR:PUMP:N", "SR:PUMP:S"},
		{"Set the backup power supply of Q1 to 1.5 A", "Q1 backup power supply current", "Q1 main power supply current", "BTS:Q1:PS2", "BTS:Q1:PS1"},
	} {
		in := intent.FromMessages(tc.msg, nil).Intent
		if err := in.Permits(write(tc.mineName, tc.mine), nil); err != nil {
			t.Errorf("%q: %s (%q) refused: %v", tc.msg, tc.mineName, tc.mine, err)
		}
		if err := in.Permits(write(tc.twinNm, tc.twin), nil); err == nil {
			t.Errorf("%q permits writing %s (%q)", tc.msg, tc.twinNm, tc.twin)
		}
	}
}

// A device named only in a comparison or an aside beside a change ("to
// match Q2 at 98 A", "the same value as Q2") is no target: a write to it
// is refused, at its value or the change's.
func TestPermitsNoDeviceAComparisonNames(t *testing.T) {
	write := func(target string, v float64) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: v, Unit: "A"}}}
	}
	asides := []string{
		"Set Q1 to 105 A to match Q2 at 98 A.",
		"Set Q1 to 105 A, matching Q2 at 98 A",
		"Set Q1 to 105 A like Q2 at 98 A",
		"Set Q1 to 105 A (Q2 is at 98 A)",
		"Set Q1 to 105 A, the same value as Q2.",
		"Set Q1 to 105 A, same as Q2",
		"Set Q1 to 105 A because Q2 went to 98 A",
		"Set Q1 to 105 A given Q2 at 98 A",
		"Set Q1 to 105 A, Q2 remaining at 98 A",
		"Set Q1 to 105 A; Q2 at 98 A is fine",
		"Set Q1 to 105 A; for reference Q2 at 98 A",
		"Set Q1 to 105 A, see Q2 at 98 A",
		"Set Q1 to 105 A, similar to Q2 at 98 A",
		"Setze Q1 auf 105 A, passend zu Q2 auf 98 A",
		"Mets Q1 à 105 A pour correspondre à Q2 à 98 A",
	}
	// Held whole (which device is meant would be a guess): Q2 no more.
	held := []string{"Set Q1 to 105 A and hold Q2 at 98 A", "Set Q1 to 105 A and leave Q2 at 98 A", "Set Q1 to 105 A, vs Q2 at 98 A",
		"Set Q1 to 105 A, Q2 should be at 98 A"}
	for _, msg := range append(asides, held...) {
		in := intent.FromMessages(msg, nil).Intent
		if err := in.Permits(write("BTS:MAG:Q1:CURRENT", 105), nil); err != nil && slices.Contains(asides, msg) {
			t.Errorf("%q: Q1 at 105 A refused: %v", msg, err)
		}
		for _, v := range []float64{98, 105} {
			if err := in.Permits(write("BTS:MAG:Q2:CURRENT", v), nil); err == nil {
				t.Errorf("%q permits writing Q2 = %g A", msg, v)
			}
		}
	}
}

// An acronym the user names the target by (an area, "the BTS Q1") must be
// the target's too — in its name, its description, or as the initials of
// the description's words ("HV", "high voltage") — when the application
// describes the target; a generic one ("PS") and a message in capitals are
// not held to it.
func TestPermitsAnAcronymTheTargetCarries(t *testing.T) {
	write := func(target, desc string, v float64, unit string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: v, Unit: unit, Description: desc}}}
	}
	const bts, sr = "quadrupole Q1 magnet current in the BTS transfer line", "quadrupole Q1 magnet current in the storage ring"
	for _, c := range []struct {
		msg       string
		action    capabilities.Action
		permitted bool
	}{
		{"Set the BTS Q1 to 105 A", write("BTS:MAG:Q1:CURRENT", bts, 105, "A"), true},
		{"Set the BTS Q1 to 105 A", write("SR:MAG:Q1:CURRENT", sr, 105, "A"), false},
		{"Setze den Strom des BTS-Quadrupols Q1 auf 105 A", write("SR:MAG:Q1:CURRENT", sr, 105, "A"), false},
		{"Mets le courant du quadrupôle Q1 du BTS à 105 A", write("SR:MAG:Q1:CURRENT", sr, 105, "A"), false},
		{"Set the BR RF cavity 2 voltage to 610 kV", write("SR:RF:CAV2:VOLT", "storage ring RF cavity 2 gap voltage setpoint", 610, "kV"), false},
		{"Set the SR RF cavity 2 voltage to 610 kV", write("SR:RF:CAV2:VOLT", "storage ring RF cavity 2 gap voltage setpoint", 610, "kV"), true},
		{"Set the gun HV to 125 kV", write("LINAC:GUN:VOLT", "electron gun high voltage of the linac", 125, "kV"), true},
		{"Set the klystron 1 HV to 45 kV", write("LINAC:KLY1:HV", "linac klystron 1 high voltage", 45, "kV"), true},
		{"Set the BPM 3 gain to 2", write("SR:C03:BPM3:GAIN", "beam position monitor 3 gain", 2, ""), true},
		{"Set the PS of Q1 to 105 A", write("BTS:MAG:Q1:CURRENT", bts, 105, "A"), true},
		{"SET THE BTS Q1 QUADRUPOLE CURRENT TO 105 A", write("BTS:MAG:Q1:CURRENT", bts, 105, "A"), true},
		// Without a description, a name saying its area in letters first
		// holds the acronym; a terse name may say its area by a number.
		{"Set the BTS Q1 to 105 A", write("SR:MAG:Q1:CURRENT", "", 105, "A"), false},
		{"Set the BTS Q1 to 105 A", write("BTS:MAG:Q1:CURRENT", "", 105, "A"), true},
		{"Set the BTS Q1 to 105 A", write("A2:MAG:Q1:CURRENT", "", 105, "A"), true},
		{"Set the BTS Q1 to 105 A", write("q1_current", "", 105, "A"), true},
		// A code typed with a letter for a digit names no device: which
		// one it resembles would be the model's guess.
		{"Set QI to 105 A", write("BTS:MAG:Q1:CURRENT", bts, 105, "A"), false},
		{"Set Ql to 105 A", write("BTS:MAG:Q1:CURRENT", bts, 105, "A"), false},
		{"Set QO to 105 A", write("BTS:MAG:Q0:CURRENT", "quadrupole Q0 magnet current in the BTS transfer line", 105, "A"), false},
		{"Set QI to 105 A", write("BTS:MAG:Q1:CURRENT", "", 105, "A"), false},
		{"SET QI TO 105 A", write("BTS:MAG:Q1:CURRENT", bts, 105, "A"), false},
		{"SET HV TO 125 KV", write("LINAC:GUN:VOLT", "electron gun high voltage of the linac", 125, "kV"), true},
		{"Set the GUN to 125 kV", write("LINAC:GUN:VOLT", "electron gun high voltage of the linac", 125, "kV"), true},
	} {
		err := intent.FromMessages(c.msg, nil).Intent.Permits(c.action, nil)
		if (err == nil) != c.permitted {
			t.Errorf("%q, %s: %v, want permitted %v", c.msg, c.action.Changes[0].Target, err, c.permitted)
		}
	}
	// An earlier message names the target of "it": its acronym holds too.
	in := intent.FromMessages("Set it to 105 A", []string{"Read the BTS Q1 quadrupole current"}).Intent
	if err := in.Permits(write("SR:MAG:Q1:CURRENT", sr, 105, "A"), nil); err == nil {
		t.Error("\"it\" after the BTS Q1 permits the storage ring's Q1")
	}
}

// A zero in words is the value 0 ("set Q1 to zero", "auf Null", "à
// zéro", "zero Q1"): it permits writing 0 to the named device only, never
// another value or another device, and a number that goes on ("zero point
// five") permits nothing.
func TestPermitsAZeroInWords(t *testing.T) {
	write := func(target string, v float64) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: v, Unit: "A"}}}
	}
	for _, msg := range []string{"Set Q1 to zero", "Bring Q1 down to zero amps", "Setze Q1 auf Null", "Mets Q1 à zéro", "Zero Q1", "Please zero Q1"} {
		in := intent.FromMessages(msg, nil).Intent
		if err := in.Permits(write("BTS:MAG:Q1:CURRENT", 0), nil); err != nil {
			t.Errorf("%q: writing 0 to Q1 refused: %v", msg, err)
		}
		for _, a := range []capabilities.Action{write("BTS:MAG:Q1:CURRENT", 5), write("BTS:MAG:Q2:CURRENT", 0)} {
			if err := in.Permits(a, nil); err == nil {
				t.Errorf("%q permits %v", msg, a.Changes[0])
			}
		}
	}
	for _, msg := range []string{"Set Q1 to zero point five", "Set Q1 to zero 5 A", "Setze Q1 auf null Komma fünf", "Set Q1 to null", "Zero Q1 to 5 A"} {
		for _, v := range []float64{0, 0.5, 5} {
			if err := intent.FromMessages(msg, nil).Intent.Permits(write("BTS:MAG:Q1:CURRENT", v), nil); err == nil {
				t.Errorf("%q permits writing %g A to Q1", msg, v)
			}
		}
	}
}

// A unit's long name, plural or spelling in another language is that unit
// ("5 millibars" is 5 mbar, never 5 bar), a unit word capgraph does not
// convert leaves the number without a value ("5 millibares", "20 degrees
// Fahrenheit"), and degrees with their scale are that scale ("20 Grad
// Celsius" is 20 °C). Before, an unknown unit word was dropped and the
// number compared alone: "Set the pressure to 5 millibars" permitted
// writing 5 bar, and "5 mv" (millivolt or megavolt?) 5 V or 5 kV.
func TestPermitsAUnitAsItIsNamed(t *testing.T) {
	for _, c := range []struct {
		msg    string
		v      float64
		unit   string
		permit bool
	}{
		{"Set the pressure to 5 millibars", 5, "mbar", true},
		{"Set the pressure to 5 millibars", 5, "bar", false},
		{"Set the field to 1.2 teslas", 1.2, "T", true},
		{"Set the field to 1.2 teslas", 1.2, "mT", false},
		{"Set the field to 1.2 teslas", 1200, "mT", true},
		{"Set the field to 12 kilogauss", 1.2, "T", true},
		{"Set the current to 50 microamps", 50, "uA", true},
		{"Set the current to 50 microamps", 50, "mA", false},
		{"Set the frequency to 499.654 megahertz", 499.654, "MHz", true},
		{"Set the frequency to 499.654 Mégahertz", 499.654, "MHz", true},
		{"Set the frequency to 499.654 Mégahertz", 499.654, "Hz", false},
		{"Set the power to 5 megawatts", 5, "MW", true},
		{"Set the power to 5 megawatts", 5, "kW", false},
		{"Set the delay to 5 milliseconds", 5, "ms", true},
		{"Set the delay to 5 milliseconds", 5, "s", false},
		{"Set the ramp time to 5 minutes", 300, "s", true},
		{"Set the ramp time to 5 minutes", 5, "s", false},
		{"Setze die Wartezeit auf 5 Sekunden", 5, "s", true},
		{"Mets le chauffage à 20 degrés Celsius", 20, "°C", true},
		{"Setze die Heizung auf 20 Grad Celsius", 20, "°C", true},
		{"Set the heater to 20 degrees Celsius", 20, "°C", true},
		{"Set the heater to 20 deg C", 20, "°C", true},
		{"Setze die Phase auf 20 Grad", 20, "deg", true},
		{"Set the phase to 20°", 20, "deg", true},
		{"Set the heater to 20°C", 20, "°C", true},
		{"Set the heater to 20° C", 20, "°C", true},
		{"Set the heater to 20°", 20, "°C", false}, // an angle, not a temperature
		{"Set the heater to 20°F", 20, "°C", false},
		{"Set the heater to 20 degrees Fahrenheit", 20, "°C", false},
		{"Set the heater to 20 deg F", 20, "°C", false},
		{"Mets le chauffage à 20 degrés Fahrenheit", 20, "°C", false},
		{"Set the pressure to 5 millibares", 5, "bar", false},
		{"Set the power to 5 kilovatios", 5, "W", false},
		{"Set the gun voltage to 125 kilovoltios", 125, "V", false},
		{"Set Q1 to 105 mÅ", 105, "A", false},
		{"Set the gun voltage to 5 mv", 5, "V", false},
		{"Set the gun voltage to 5 mv", 5, "mV", false},
		{"Set the gun voltage to 5 mv", 5, "kV", false},
		{"Set the gun voltage to 5 mv", 5, "MV", false},
		{"Set the gun voltage to 5 uv", 5, "V", false},
		{"Set the power to 5 mw", 5, "W", false},
		{"Set Q1 to 105 ampères", 105, "A", true},
	} {
		target := "X:Y"
		switch {
		case strings.Contains(c.msg, "delay"):
			target = "TIMING:DELAY"
		case strings.Contains(c.msg, "Q1"):
			target = "BTS:MAG:Q1:CURRENT"
		}
		a := capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: c.v, Unit: c.unit}}}
		err := intent.FromMessages(c.msg, nil).Intent.Permits(a, nil)
		if c.permit && err != nil {
			t.Errorf("%q: writing %g %s refused: %v", c.msg, c.v, c.unit, err)
		}
		if !c.permit && err == nil {
			t.Errorf("%q permits writing %g %s", c.msg, c.v, c.unit)
		}
	}
}

// A value's sign is the user's as written: a minus in words is a minus
// ("to minus 2 A", "auf minus 2 A", "à moins 2 A"), and a dash or minus
// the number does not carry ("‐2 A", "﹣2 A", "－2 A") or words after the
// value that give it a sign ("2 A negative", "2 A, reversed polarity")
// leave no value. Before, "to ‐2 A" and "2 A, reversed polarity" permitted
// writing +2 A.
func TestPermitsASignAsWritten(t *testing.T) {
	write := func(v float64) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: "BTS:HC3:CURRENT", Value: v, Unit: "A"}}}
	}
	for _, msg := range []string{"Set corrector HC3 to minus 2 A", "Set corrector HC3 to negative 2 A", "Setze HC3 auf minus 2 A", "Mets HC3 à moins 2 A", "Set HC3 to -2 A", "Set HC3 to −2 A",
		"Make corrector HC3 minus 2 A", "Mach HC3 minus 2 A", "Make HC3 negative 2 A"} {
		in := intent.FromMessages(msg, nil).Intent
		if err := in.Permits(write(-2), nil); err != nil {
			t.Errorf("%q: writing -2 A refused: %v", msg, err)
		}
		if err := in.Permits(write(2), nil); err == nil {
			t.Errorf("%q permits writing +2 A", msg)
		}
	}
	for _, msg := range []string{"Set HC3 to ‐2 A", "Set HC3 to ‑2 A", "Set HC3 to ﹣2 A", "Set HC3 to －2 A", "Set HC3 to ➖2 A", "Set HC3 to –2 A", "Set HC3 to —2 A",
		"Set HC3 to 2 A negative", "Set HC3 to 2 A in the negative direction", "Set HC3 to 2 A in the opposite direction", "Set HC3 to 2 A, reversed polarity",
		"Set HC3 to 2 A with inverted polarity", "Setze HC3 auf 2 A, umgepolt", "Mets HC3 à 2 A en polarité inversée"} {
		for _, v := range []float64{2, -2} {
			if err := intent.FromMessages(msg, nil).Intent.Permits(write(v), nil); err == nil {
				t.Errorf("%q permits writing %g A", msg, v)
			}
		}
	}
}

// A record's field other than its value, and a readback, are not the
// setting the user named: "Set Q1 to 105 A" never permits writing
// ….SCAN, ….DISA, ….PROC, ….DESC, ….SIMM or …:RB (before, all were
// permitted), unless the user's words name them ("Set the Q1 SCAN field
// …", "… Q1 readback …"); ….VAL is the value, and an alarm limit the user
// names may be ….HIHI.
func TestPermitsNoFieldTheWordsDoNotName(t *testing.T) {
	write := func(target string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: target, Value: 105.0, Unit: "A"}}}
	}
	in := intent.FromMessages("Set Q1 to 105 A", nil).Intent
	for _, target := range []string{"BTS:MAG:Q1:CURRENT.SCAN", "BTS:MAG:Q1:CURRENT.DISA", "BTS:MAG:Q1:CURRENT.PROC", "BTS:MAG:Q1:CURRENT.DESC",
		"BTS:MAG:Q1:CURRENT.SIMM", "BTS:MAG:Q1:CURRENT.OMSL", "BTS:MAG:Q1:CURRENT.EGU", "BTS:MAG:Q1:CURRENT:RB", "BTS:MAG:Q1:CURRENT_RBV", "BTS:MAG:Q1:ReadBack"} {
		if err := in.Permits(write(target), nil); err == nil {
			t.Errorf("\"Set Q1 to 105 A\" permits writing %s", target)
		}
	}
	for _, c := range []struct{ msg, target string }{
		{"Set Q1 to 105 A", "BTS:MAG:Q1:CURRENT.VAL"},
		{"Set Q1 to 105 A", "BTS:MAG:Q1:CURRENT"},
		{"Set Q1 to 105 A", "sr.mag.q1.current"},
		{"Set the Q1 SCAN field to 105 A", "BTS:MAG:Q1:CURRENT.SCAN"},
		{"Set the Q1 readback to 105 A", "BTS:MAG:Q1:CURRENT:RB"},
		{"Set the Q1 alarm limit to 105 A", "BTS:MAG:Q1:CURRENT.HIHI"},
	} {
		if err := intent.FromMessages(c.msg, nil).Intent.Permits(write(c.target), nil); err != nil {
			t.Errorf("%q: %s refused: %v", c.msg, c.target, err)
		}
	}
}

// A list of devices split by commas permits each device it names ("Set
// Q1, Q2 and Q3 to 105 A"); a range named by its ends ("Q1-Q3", "Q1
// through Q3", "Q1 bis Q3") permits none — before, its ends were
// permitted and the device between refused, half the change carried out.
func TestPermitsAListButNoRange(t *testing.T) {
	write := func(d string) capabilities.Action {
		return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: "BTS:MAG:" + d + ":CURRENT", Value: 105.0, Unit: "A"}}}
	}
	for _, msg := range []string{"Set Q1, Q2 and Q3 to 105 A", "Set Q1, Q2, Q3 to 105 A", "Setze Q1, Q2 und Q3 auf 105 A", "Mets Q1, Q2 et Q3 à 105 A",
		"Set the BTS Q1, Q2 and Q3 currents to 105 A", "Set the quadrupoles Q1, Q2 and Q3 to 105 A"} {
		in := intent.FromMessages(msg, nil).Intent
		for _, d := range []string{"Q1", "Q2", "Q3"} {
			if err := in.Permits(write(d), nil); err != nil {
				t.Errorf("%q: %s refused: %v", msg, d, err)
			}
		}
		if err := in.Permits(write("Q4"), nil); err == nil {
			t.Errorf("%q permits Q4", msg)
		}
	}
	for _, msg := range []string{"Set Q1-Q3 to 105 A", "Set Q1–Q3 to 105 A", "Set Q1 through Q3 to 105 A", "Set Q1 to Q3 to 105 A", "Set Q1..Q3 to 105 A",
		"Set Q1-3 to 105 A", "Setze Q1 bis Q3 auf 105 A", "Mets Q1 à Q3 à 105 A", "Set Q1, Q2 is at 98 A"} {
		for _, d := range []string{"Q1", "Q2", "Q3"} {
			if err := intent.FromMessages(msg, nil).Intent.Permits(write(d), nil); err == nil {
				t.Errorf("%q permits %s", msg, d)
			}
		}
	}
}

// A device set apart after the change ("… except Q2", "…, not Q2", "…,
// leave Q2", "…, Q2 excluded") is never permitted when the change's target
// names it or names no device: before, "Set Q1 and Q2 to 105 A except Q2"
// permitted writing Q2, and "Set all quadrupoles to 105 A except Q2"
// permitted Q2 alone (the only device named stood for "all
// quadrupoles"). The message is held with a note.
func TestPermitsNoDeviceSetApartAfterItsChange(t *testing.T) {
	for _, tail := range []string{"except Q2", "but not Q2", ", not Q2", "(without Q2)", ", leave Q2", ", skip Q2", ", Q2 excluded", "; actually not Q2",
		". Q2 stays.", ", Q2 no", ", keep Q2", "excluding Q2", ", ignoring Q2"} {
		for _, msg := range []string{"Set Q1 and Q2 to 105 A " + tail, "Set Q1, Q2 and Q3 to 105 A " + tail, "Set all quadrupoles to 105 A " + tail} {
			msg = strings.NewReplacer(" ,", ",", " ;", ";", " .", ".").Replace(msg)
			heldFor(t, msg, "sets a device apart from its change", "Q1", "Q2", "Q3")
		}
	}
	for _, msg := range []string{"Setze Q1 und Q2 auf 105 A außer Q2", "Mets Q1 et Q2 à 105 A sauf Q2"} {
		if err := intent.FromMessages(msg, nil).Intent.Permits(quadWrite("Q2"), nil); err == nil {
			t.Errorf("%q permits Q2", msg)
		}
	}
	// A device the change does not name, set apart: the change stands.
	if err := intent.FromMessages("Set Q1 to 105 A, but not Q7", nil).Intent.Permits(quadWrite("Q1"), nil); err != nil {
		t.Errorf("\"Set Q1 to 105 A, but not Q7\": Q1 refused: %v", err)
	}
}

// A target naming no device refers to the devices the message names
// elsewhere ("Read Q1 and set it to 105 A"), but never to one it compares
// with or sets apart: "Set the quadrupole current to 105 A, it's the one
// next to Q2" permitted writing Q2, the neighbour the user ruled out. Such
// a message is held with a note.
func TestPermitsNoReferentTheWordsSetApart(t *testing.T) {
	for _, msg := range []string{"Set the quadrupole current to 105 A, it's the one next to Q2", "Set the quadrupole current to 105 A, same as Q2",
		"Set the quadrupole current to 105 A like Q2", "Set the quadrupole to 105 A, not Q2", "Set it to 105 A, unlike Q2",
		"After Q2 tripped, set the quadrupole to 105 A", "Set the quadrupole near Q2 to 105 A", "Setze den Quadrupol neben Q2 auf 105 A"} {
		heldFor(t, msg, "", "Q1", "Q2", "Q3") // held by one rule or another, each with its own note
	}
	for _, c := range []struct{ msg, device string }{{"Read Q1 and set it to 105 A", "Q1"}, {"Q2 tripped yesterday. Set the quadrupole current to 105 A.", "Q2"}} {
		if err := intent.FromMessages(c.msg, nil).Intent.Permits(quadWrite(c.device), nil); err != nil {
			t.Errorf("%q: %s refused: %v", c.msg, c.device, err)
		}
	}
}

// A device numbered in words or in small print ("quadrupole number one",
// "quad one", "Q¹", "Q₁") is no name the rules read: before, such a target
// named no device and permitted every quadrupole its words describe (Q2
// and Q11 for "Q¹"). It holds the message with a note; "that one" after a
// read still refers to the device read.
func TestPermitsNoDeviceNumberedInWords(t *testing.T) {
	for _, msg := range []string{"Set quadrupole number one to 105 A", "Set quad one to 105 A", "Set Q¹ to 105 A", "Set Q₁ to 105 A", "Setze Quadrupol Nummer eins auf 105 A",
		"Mets le quadrupôle numéro un à 105 A", "Set Q one to 105 A", "Set Q to 105 A", "Set the Q to 105 A"} {
		heldFor(t, msg, "a number in words or in small print, or without its number", "Q1", "Q2", "Q11")
	}
	if err := intent.FromMessages("Set that one to 105 A", []string{"Read Q1"}).Intent.Permits(quadWrite("Q1"), nil); err != nil {
		t.Errorf("\"that one\" after reading Q1: %v", err)
	}
	if err := intent.FromMessages("Set the gun HV to 125 kV", nil).Intent.Permits(capabilities.Action{Capability: "channel_write",
		Changes: []capabilities.Change{{Target: "LINAC:GUN:VOLT", Value: 125.0, Unit: "kV", Description: "electron gun high voltage of the linac"}}}, nil); err != nil {
		t.Errorf("\"the gun HV\": %v", err)
	}
}

// quadWrite is a write of 105 A to the BTS quadrupole d, described as one.
func quadWrite(d string) capabilities.Action {
	return capabilities.Action{Capability: "channel_write", Changes: []capabilities.Change{{Target: "BTS:MAG:" + d + ":CURRENT", Value: 105.0, Unit: "A", Description: "BTS quadrupole " + d}}}
}

// heldFor fails the test unless msg permits writing none of devices and,
// when note is not "", its note says note.
func heldFor(t *testing.T, msg, note string, devices ...string) {
	t.Helper()
	f := intent.FromMessages(msg, nil)
	for _, d := range devices {
		if err := f.Intent.Permits(quadWrite(d), nil); err == nil {
			t.Errorf("%q permits %s", msg, d)
		}
	}
	if note != "" && !strings.Contains(f.Intent.Note, note) {
		t.Errorf("%q: note %q, want %q", msg, f.Intent.Note, note)
	}
}

// An amount named before its target ("add 5 A to Q1", "take 5 A off Q1")
// is a change by it, signed by the verb: a planner writing the other sign,
// another device, or the amount as a value is refused.
func TestPermitsAnAmountNamedFirst(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want float64 // Q1 now reads 92 A
	}{
		{"Add 5 A to Q1", 97}, {"Please add 5 A to the BTS Q1 current", 97}, {"Ajoute 5 A à Q1", 97}, {"Addiere 5 A zu Q1", 97},
		{"Take 5 A off Q1", 87}, {"Subtract 5 A from Q1", 87}, {"Remove 5 A from Q1 now", 87}, {"Knock 5 A off Q1", 87},
		{"Retire 5 A de Q1", 87}, {"Zieh 5 A von Q1 ab", 87}, {"Nimm 5 A von Q1 weg", 87},
	} {
		in := intent.FromMessage(c.msg).Intent
		if err := in.Permits(act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: c.want, Unit: "A"}), q1Now); err != nil {
			t.Errorf("%q: Q1 = %g A refused: %v", c.msg, c.want, err)
		}
		for _, wrong := range []capabilities.Change{
			{Target: "BTS:MAG:Q1:CURRENT", Value: 92 + (92 - c.want), Unit: "A"}, // the other sign
			{Target: "BTS:MAG:Q1:CURRENT", Value: 5, Unit: "A"},                  // the amount as a value
			{Target: "BTS:MAG:Q4:CURRENT", Value: 80 + (c.want - 92), Unit: "A"}, // another device
		} {
			if err := in.Permits(act(wrong), q1Now); !errors.Is(err, intent.ErrMismatch) {
				t.Errorf("%q permits %s = %g A: %v", c.msg, wrong.Target, wrong.Value, err)
			}
		}
	}
	for _, msg := range []string{"Don't add 5 A to Q1", "Add 5 A to Q1?", "Add about 5 A to Q1", "Add 5 A to Q1 and 3 A to Q2", "Zieh 5 A von Q1"} {
		in := intent.FromMessage(msg).Intent
		if err := in.Permits(act(capabilities.Change{Target: "BTS:MAG:Q1:CURRENT", Value: 97, Unit: "A"}), q1Now); err == nil {
			t.Errorf("%q permits Q1 = 97 A", msg)
		}
	}
}

// A target the user names by a kind of device and no number ("the gun
// voltage", "the booster RF voltage") is permitted only on a target whose
// name or description says that kind: a planner writing a klystron's high
// voltage for the gun, or a storage ring cavity for the booster, is
// refused; a quantity the user names ("tune", "phase") must be the
// target's too, numbered or not — a value without a unit says nothing of
// it. A numbered target's kind is told by its number, an undescribed
// target has no words to compare.
func TestPermitsNoOtherKindOfDevice(t *testing.T) {
	const (
		gun     = "electron gun high voltage of the linac"
		kly     = "linac klystron 1 modulator high voltage"
		booster = "booster RF cavity voltage"
		ring    = "storage ring RF cavity 1 gap voltage setpoint"
	)
	for _, c := range []struct {
		msg, target, description string
		permitted                bool
	}{
		{"Set the gun voltage to 80 kV", "LINAC:GUN:VOLT", gun, true},
		{"Set the gun voltage to 80 kV", "LINAC:KLY1:HV", kly, false},
		{"Setze die Spannung der Elektronenkanone auf 80 kV", "LINAC:KLY1:HV", kly, false},
		{"Mets la tension du canon à 80 kV", "LINAC:KLY1:HV", kly, false},
		{"Set the klystron high voltage to 80 kV", "LINAC:GUN:VOLT", gun, false},
		{"Set the kly HV to 80 kV", "LINAC:KLY1:HV", kly, true},
		{"Set the booster RF voltage to 80 kV", "SR:RF:CAV1:VOLT", ring, false},
		{"Set the booster RF voltage to 80 kV", "BR:RF:VOLT", booster, true},
		{"Set the storage ring RF voltage to 80 kV", "BR:RF:VOLT", booster, false},
		{"Set the storage ring RF voltage to 80 kV", "SR:RF:CAV1:VOLT", ring, true},
		{"Set the RF voltage to 80 kV", "BR:RF:VOLT", booster, true},                               // no kind named
		{"Set the gun voltage to 80 kV", "LINAC:KLY1:HV", "", true},                                // no description to compare
		{"Set the quadrupole Q1 current to 80 A", "BTS:MAG:Q1:CURRENT", "Q1 magnet current", true}, // numbered
		// The quantity named, also without a unit and for a numbered target.
		{"Set the horizontal tune to 80", "SR:BEAM:TUNE:X", "horizontal betatron tune of the storage ring", true},
		{"Set the horizontal tune to 80", "SR:RF:CAV1:VOLT", ring, false},
		{"Set the cavity 1 phase to 80", "SR:RF:CAV1:VOLT", ring, false},
		{"Set the cavity 1 phase to 80", "SR:RF:CAV1:PHASE", "storage ring RF cavity 1 phase", true},
		{"Setze die Phase der Kavität 1 auf 80", "SR:RF:CAV1:VOLT", ring, false},
		{"Set the cooling water temperature to 80 degC", "SR:C01:TEMP:AIR", "tunnel air temperature in storage ring sector 1", false},
		{"Set the cooling water temperature to 80 degC", "SR:C01:TEMP:MAG", "magnet cooling water temperature in storage ring sector 1", true},
		{"Set the transfer line quadrupole current to 80 A", "SR:C01:QF:CURRENT", "focusing quadrupole magnet current in storage ring sector 1", false},
		// Numbered, and described by a kind: the number may be the sector's.
		{"Set the cooling water temperature in sector 1 to 80 degC", "SR:C01:TEMP:AIR", "tunnel air temperature in storage ring sector 1", false},
		{"Set the cooling water temperature in sector 1 to 80 degC", "SR:C01:TEMP:MAG", "magnet cooling water temperature in storage ring sector 1", true},
		{"Set the quadrupole current in the BTS line at BPM 1 to 80 A", "SR:C01:QF:CURRENT", "focusing quadrupole magnet current in storage ring sector 1", false},
		{"Set the storage ring quadrupole Q1 current to 80 A", "BTS:MAG:Q1:CURRENT", "quadrupole Q1 current in the BTS transfer line", false},
		{"Set the BTS quadrupole Q1 current to 80 A", "BTS:MAG:Q1:CURRENT", "quadrupole Q1 current in the BTS transfer line", true},
	} {
		unit := "kV"
		switch {
		case strings.Contains(c.msg, " A"):
			unit = "A"
		case strings.Contains(c.msg, "degC"):
			unit = "degC"
		case strings.HasSuffix(c.msg, " 80"):
			unit = map[bool]string{true: "kV", false: ""}[strings.Contains(c.target, "VOLT")]
		}
		in := intent.FromMessage(c.msg).Intent
		err := in.Permits(act(capabilities.Change{Target: c.target, Value: 80.0, Unit: unit, Description: c.description}), nil)
		if c.permitted && err != nil || !c.permitted && !errors.Is(err, intent.ErrMismatch) {
			t.Errorf("%q on %s (%q): %v, want permitted %v", c.msg, c.target, c.description, err, c.permitted)
		}
	}
}
