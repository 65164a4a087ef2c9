package intent

import (
	"strings"
	"testing"
)

// The rules decide; a model's reading is never taken, not even a unit the
// user left out. Whatever else it says is reported.
func TestDecide(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	change := func(target string, value *float64, unit string) *Intent {
		return &Intent{Kind: KindChange, Changes: []RequestedChange{{Target: target, Value: value, Unit: unit}}}
	}
	for _, tt := range []struct {
		name    string
		msg     string
		model   *Intent
		want    string // Summary
		differs string // in the event text; "" for none
	}{
		{"no model", "Set Q1 to 105 A", nil, "change: Q1 to 105 A", ""},
		{"the model agrees", "Set Q1 to 105 A", change("BTS Q1", v(105), "A"), "change: Q1 to 105 A", ""},
		{"the model agrees in other units", "Set Q1 to 105 A", change("Q1", v(0.105), "kA"), "change: Q1 to 105 A", ""},
		{"the model's unit is not taken", "Set Q1 to 105", change("Q1", v(105), "amps"), "change: Q1 to 105", ""},
		{"the model's prefixed unit is not taken", "Set Q1 to 105", change("Q1", v(105), "kA"), "change: Q1 to 105", ""},
		{"the model's smaller unit is not taken", "Set the RF cavity 2 voltage to 610", change("RF cavity 2", v(610), "V"), "change: the RF cavity 2 voltage to 610", ""},
		{"the model's scaled unit is not taken", "Set the vacuum setpoint to 2", change("the vacuum setpoint", v(2), "mbar"), "change: the vacuum setpoint to 2", ""},
		{"the model claims a change for a question", "Wie hoch ist der Strom des Quadrupols Q1 in der BTS-Linie?",
			change("BTS Q1", v(140), "A"), "read", "The model read a change (change: BTS Q1 to 140 A), but your words do not ask for one"},
		{"the model claims a change for a read", "Read the quadrupole Q1 current in the BTS line", change("Q1", v(140), "A"), "read", "nothing will be changed"},
		{"the model claims a change for a hypothetical", "What would happen if I set Q1 to 105 A?", change("Q1", v(105), "A"), "hypothetical", "hypothetical"},
		{"the model claims another value", "Set Q1 to 105 A", change("Q1", v(150), "A"), "change: Q1 to 105 A", "Q1 to 150 A"},
		{"the model claims another target", "Set Q1 to 105 A", change("Q4", v(105), "A"), "change: Q1 to 105 A", "Q4 to 105 A"},
		{"the model adds a change", "Set Q1 to 105 A", &Intent{Kind: KindChange, Changes: []RequestedChange{
			{Target: "Q1", Value: v(105), Unit: "A"}, {Target: "Q2", Value: v(98), Unit: "A"}}}, "change: Q1 to 105 A", "Q2 to 98 A"},
		{"the model reads the change as a read", "Set Q1 to 105 A", &Intent{Kind: KindRead}, "change: Q1 to 105 A", "as read"},
		{"the model's unit for another number is not taken", "Set Q1 to 105", change("Q1", v(0.105), "kA"), "change: Q1 to 105", "Q1 to 0.105 kA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, differs := Decide(FromMessage(tt.msg), tt.model)
			if got.Summary() != tt.want {
				t.Errorf("intent %q, want %q", got.Summary(), tt.want)
			}
			if tt.differs == "" && differs != "" || tt.differs != "" && !strings.Contains(differs, tt.differs) {
				t.Errorf("event %q, want %q", differs, tt.differs)
			}
		})
	}
}

// Only a change of the intent, with its value or amount, is included: a
// model's task text is held to it.
func TestIncludes(t *testing.T) {
	in := FromMessage("Set the quadrupole Q1 current in the BTS line to 105 A").Intent
	for text, want := range map[string]bool{
		"Set BTS:MAG:Q1:CURRENT to 105 A": true, "Set the BTS Q1 current to 0.105 kA": true,
		"Set BTS:MAG:Q1:CURRENT to 140 A": false, "Set BTS:MAG:Q4:CURRENT to 105 A": false, "Raise Q1 by 5 A": false,
	} {
		c := FromMessage(text).Intent.Changes[0]
		if got := in.Includes(c); got != want {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
	}
	rel := FromMessage("Raise the RF cavity 2 voltage by 10 kV").Intent
	if !rel.Includes(FromMessage("Increase SR:RF:CAV2:VOLT by 10 kV").Intent.Changes[0]) || rel.Includes(FromMessage("Set Q1 to 140 A").Intent.Changes[0]) {
		t.Error("a relative change")
	}
	if (Intent{Kind: KindRead}).Includes(RequestedChange{Target: "Q1"}) {
		t.Error("a read includes a change")
	}
}
