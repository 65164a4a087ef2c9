package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// rc is a requested change for tables: value < -1e300 means none.
func rc(target string, value float64, unit string) state.RequestedChange {
	c := state.RequestedChange{Target: target, Unit: unit}
	if value > -1e300 {
		c.Value = &value
	}
	return c
}

const noValue = -1e308

func changesString(cs []state.RequestedChange) string {
	var b strings.Builder
	for _, c := range cs {
		v := "nil"
		if c.Value != nil {
			v = fmt.Sprint(*c.Value)
		}
		fmt.Fprintf(&b, "[%q %s %q]", c.Target, v, c.Unit)
	}
	return b.String()
}

// The offline rules on messages as operators write them. firm marks an
// explicit "nothing is to change" a model's reading cannot overrule.
func TestOfflineIntentRules(t *testing.T) {
	tests := []struct {
		msg     string
		kind    state.IntentKind
		firm    bool
		changes []state.RequestedChange
	}{
		// Reads and questions.
		{"Read the BTS Q1 quadrupole current", state.IntentRead, false, nil},
		{"What is the quadrupole Q1 current in the BTS line?", state.IntentRead, true, nil},
		{"What's the setpoint of the BTS Q1 quadrupole?", state.IntentRead, true, nil},
		{"What’s Q1 set to?", state.IntentRead, true, nil},
		{"whats the q1 curent", state.IntentRead, true, nil},
		{"is Q1 above 100 A?", state.IntentRead, true, nil},
		{"Is the Q1 current set to 105 A?", state.IntentRead, true, nil},
		{"can you tell me what Q1 is set to", state.IntentRead, false, nil},
		{"Check whether Q1 is set to 105 A", state.IntentRead, false, nil},
		{"Verify that Q1 was set to 105 A", state.IntentRead, false, nil},
		{"Tell me if Q1 is at 105 A", state.IntentRead, false, nil},
		{"Q1 current?", state.IntentRead, false, nil},
		{"Q1 to 105 A?", state.IntentRead, false, nil},
		{"Set point of Q1?", state.IntentRead, false, nil},
		{"Lower limit of the Q1 current", state.IntentRead, false, nil},
		{"Change in Q1 since yesterday", state.IntentRead, false, nil},
		{"Show me the Q1 setpoint history for the last day", state.IntentRead, false, nil},
		{"was Q1 changed yesterday?", state.IntentRead, true, nil},
		{"Who changed Q1 to 105 A last night?", state.IntentRead, true, nil},
		{"When was Q1 last set to 105 A", state.IntentRead, true, nil},
		{"I set Q1 to 105 A this morning, what is it now?", state.IntentRead, true, nil},
		{"After setting Q1 to 105 A, how did the lifetime change?", state.IntentRead, true, nil},
		{"Set the time range to 2 hours and show Q1", state.IntentRead, false, nil},
		{"Plot Q1 and set the axis to 0 to 200", state.IntentRead, false, nil},
		// Hypotheticals and advice.
		{"What would happen if I set Q1 to 105 A?", state.IntentHypothetical, true, nil},
		{"what happens if we raise Q1 to 105 A", state.IntentHypothetical, true, nil},
		{"What if Q1 were 105 A?", state.IntentHypothetical, true, nil},
		{"should I set Q1 to 105?", state.IntentHypothetical, true, nil},
		{"Can I change Q1 to 105 A?", state.IntentHypothetical, true, nil},
		{"Is it safe to set Q1 to 105 A?", state.IntentHypothetical, true, nil},
		{"Hypothetically, set Q1 to 105 A", state.IntentHypothetical, true, nil},
		{"Suppose Q1 is set to 105 A, would the beam survive?", state.IntentHypothetical, true, nil},
		{"How do I set Q1 to 105 A?", state.IntentHypothetical, true, nil},
		{"If I ramped Q1 to 105 A, would the orbit move?", state.IntentHypothetical, true, nil},
		// Negations.
		{"Don't change anything, just read the Q1 current in BTS", state.IntentRead, true, nil},
		{"Do not set Q1 to 105 A", state.IntentRead, true, nil},
		{"dont touch anything, what is Q1", state.IntentRead, true, nil},
		{"Without changing anything, read Q1", state.IntentRead, true, nil},
		{"No changes please, only read Q1", state.IntentRead, true, nil},
		{"Read-only: what is Q1?", state.IntentRead, true, nil},
		{"Never write to Q1, just show its value", state.IntentRead, true, nil},
		{"Set Q1 to 105 A — no wait, don't change it", state.IntentRead, true, nil},
		{"Nothing should be changed; show the Q1 current", state.IntentRead, true, nil},
		// Changes.
		{"Set the quadrupole Q1 current in the BTS line to 105 A", state.IntentChange, false,
			[]state.RequestedChange{rc("the quadrupole Q1 current in the BTS line", 105, "A")}},
		{"please set Q1 to 105 amps", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A")}},
		{"could you chnage the BTS Q1 current to 105A?", state.IntentChange, false, []state.RequestedChange{rc("the BTS Q1 current", 105, "A")}},
		{"sett Q1 to 105 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A")}},
		{"SET Q1 TO 105 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A")}},
		{"Set Q1 to 105 A and Q2 to 98 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A"), rc("Q2", 98, "A")}},
		{"Set Q1 to 105 A, Q2 to 98 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A"), rc("Q2", 98, "A")}},
		{"Set the Q1 and Q2 currents to 105 A", state.IntentChange, false, []state.RequestedChange{rc("the Q1 and Q2 currents", 105, "A")}},
		{"ramp Q1 up by 5 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", noValue, "")}},
		{"lower Q1 from 105 A to 100 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", 100, "A")}},
		{"turn off RF cavity 2", state.IntentChange, false, []state.RequestedChange{rc("RF cavity 2", noValue, "")}},
		{"Switch the RF cavity 2 on", state.IntentChange, false, []state.RequestedChange{rc("the RF cavity 2", noValue, "")}},
		{"write 105 A to BTS:MAG:Q1:CURRENT", state.IntentChange, false, []state.RequestedChange{rc("BTS:MAG:Q1:CURRENT", 105, "A")}},
		{"Read Q1 and then set it to 105 A", state.IntentChange, false, []state.RequestedChange{rc("it", 105, "A")}},
		{"Don't forget to set Q1 to 105 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A")}},
		{"Change the RF cavity 2 voltage to 610 kV", state.IntentChange, false, []state.RequestedChange{rc("the RF cavity 2 voltage", 610, "kV")}},
		{"go ahead and adjsut Q1 to 105", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "")}},
		{"I want you to increase the Q1 current to 105 A", state.IntentChange, false, []state.RequestedChange{rc("the Q1 current", 105, "A")}},
		{"Set Q1 at 10:30 to 105 A", state.IntentChange, false, []state.RequestedChange{rc("Q1 at 10:30", 105, "A")}},
		{"What is Q1? Set it to 105 A.", state.IntentChange, false, []state.RequestedChange{rc("it", 105, "A")}},
		{"Set Q1=105", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "")}},
		{"put Q1 at -3.5e1 A", state.IntentChange, false, []state.RequestedChange{rc("Q1", -35, "A")}},
		{"Can you please set the Q1 current to 105 A?", state.IntentChange, false, []state.RequestedChange{rc("the Q1 current", 105, "A")}},
		{"Set Q1 to 105 A, not 150", state.IntentChange, false, []state.RequestedChange{rc("Q1", 105, "A")}},
		{"enable the RF cavity 3", state.IntentChange, false, []state.RequestedChange{rc("the RF cavity 3", noValue, "")}},
		// Not changes although a change verb is there.
		{"Set Q1", state.IntentRead, false, nil},
		{"Increase Q1", state.IntentRead, false, nil},
		{"Unable to read Q1", state.IntentRead, false, nil},
		{"", state.IntentRead, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			f := offlineIntent(tt.msg)
			if f.intent.Kind != tt.kind || f.firm != tt.firm {
				t.Errorf("kind %s firm %v (%s), want %s firm %v", f.intent.Kind, f.firm, f.reason, tt.kind, tt.firm)
			}
			if got, want := changesString(f.intent.Changes), changesString(tt.changes); got != want {
				t.Errorf("changes %s, want %s", got, want)
			}
		})
	}
}

// A short follow-up without a verb continues the previous message's change;
// it never continues a read.
func TestMessageIntentContinuation(t *testing.T) {
	s := newState("and Q2 to 98 A", "Set Q1 to 105 A", "Set BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A")
	f := messageIntent(s)
	if !f.intent.IsChange() || changesString(f.intent.Changes) != changesString([]state.RequestedChange{rc("Q2", 98, "A")}) {
		t.Errorf("continuation of a change: %+v (%s)", f.intent, f.reason)
	}
	s = newState("and Q2 to 98 A", "What is Q1?", "91.99 A")
	if f := messageIntent(s); f.intent.IsChange() {
		t.Errorf("a follow-up of a read became a change: %+v", f.intent)
	}
	// A message with a verb of its own is no continuation, nor is anything
	// without an earlier change.
	s = newState("verify that Q1 was set to 105 A", "Set Q1 to 105 A", "done")
	if f := messageIntent(s); f.intent.IsChange() {
		t.Errorf("a check after a change became a change: %+v", f.intent)
	}
	if f := messageIntent(newState("that Q1 to 105 A")); f.intent.IsChange() {
		t.Errorf("a continuation without a previous message: %+v", f.intent)
	}
	// The latest message decides, not the one before.
	s = newState("and what is Q2?", "Set Q1 to 105 A", "done")
	if f := messageIntent(s); f.intent.IsChange() {
		t.Errorf("a question after a change became a change: %+v", f.intent)
	}
}

func TestDecideIntent(t *testing.T) {
	change := &state.Intent{Kind: state.IntentChange}
	read := &state.Intent{Kind: state.IntentRead}
	firmRead := intentFinding{intent: state.Intent{Kind: state.IntentRead}, firm: true}
	softRead := intentFinding{intent: state.Intent{Kind: state.IntentRead}}
	offChange := intentFinding{intent: state.Intent{Kind: state.IntentChange}}
	for _, tt := range []struct {
		model     *state.Intent
		offline   intentFinding
		want      state.IntentKind
		overruled bool
	}{
		{nil, offChange, state.IntentChange, false},
		{nil, firmRead, state.IntentRead, false},
		{change, firmRead, state.IntentRead, true},
		{change, softRead, state.IntentChange, false}, // "Setze Q1 auf 105 A": the model knows better
		{read, offChange, state.IntentRead, false},    // reading a change as a read is the safe mistake
	} {
		got, over := decideIntent(tt.model, tt.offline)
		if got.Kind != tt.want || over != tt.overruled {
			t.Errorf("decideIntent(%v, %+v) = %s %v, want %s %v", tt.model, tt.offline, got.Kind, over, tt.want, tt.overruled)
		}
	}
}

func TestParseTaskIntent(t *testing.T) {
	for _, tt := range []struct {
		name, reply string
		want        string // Summary of the intent
		err         string
	}{
		{"omitted", `{"task": "Read Q1", "depends_on_chat_history": false}`, "read", ""},
		{"read", `{"task": "Read Q1", "depends_on_chat_history": false, "intent": {"kind": "read", "changes": []}}`, "read", ""},
		{"change", "```json\n" + `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "BTS Q1", "value": 105, "unit": "amps"}]}}` + "\n```",
			"change: BTS Q1 to 105 A", ""},
		{"null value", `{"task": "Turn off cavity 2", "intent": {"kind": "Change", "changes": [{"target": "RF cavity 2", "value": null, "unit": ""}]}}`, "change: RF cavity 2", ""},
		{"changes of a hypothetical dropped", `{"task": "What if Q1 were 105 A?", "intent": {"kind": "hypothetical", "changes": [{"target": "Q1", "value": 105}]}}`, "hypothetical", ""},
		{"bad kind", `{"task": "x", "intent": {"kind": "write"}}`, "", `"intent.kind" must be "read", "change" or "hypothetical", got "write"`},
		{"value as text", `{"task": "x", "intent": {"kind": "change", "changes": [{"target": "Q1", "value": "105 A"}]}}`, "", `"intent.changes[0]": "value" must be a number or null`},
		{"unknown key", `{"task": "x", "intent": {"kind": "change", "changes": [{"target": "Q1", "Value": 105}]}}`, "", `unknown key(s) "Value"`},
		{"unknown intent key", `{"task": "x", "intent": {"kind": "read", "reason": "a question"}}`, "", `"intent" has unknown key(s) "reason"`},
		{"intent not an object", `{"task": "x", "intent": "read"}`, "", `"intent" must be a JSON object`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			task, err := parseTask(tt.reply)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := task.Intent.Summary(); got != tt.want {
				t.Errorf("intent %q, want %q", got, tt.want)
			}
		})
	}
}

// The model's intent is kept unless the message says nothing is to change;
// without one, the offline rules decide; a bad intent is re-prompted.
func TestTaskExtractionIntentWithModel(t *testing.T) {
	reg := controlRoom(t)
	for _, tt := range []struct {
		input, reply string
		want         state.IntentKind
		status       bool // the overruling is reported
	}{
		{"Set Q1 to 105 A", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 105, "unit": "A"}]}}`, state.IntentChange, false},
		{"Setze Q1 auf 105 A", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 105, "unit": "A"}]}}`, state.IntentChange, false},
		{"What would happen if I set Q1 to 105 A?", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 105, "unit": "A"}]}}`, state.IntentHypothetical, true},
		{"Don't change anything, what is Q1?", `<think>The user wants Q1 at 105.</think>{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change"}}`, state.IntentRead, true},
		{"Set Q1 to 105 A", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false}`, state.IntentChange, false},
		{"What is Q1?", `{"task": "What is Q1?", "depends_on_chat_history": false}`, state.IntentRead, false},
	} {
		t.Run(tt.input, func(t *testing.T) {
			m := llmtest.New().Script(llm.RoleTaskExtraction, llmtest.Text(tt.reply))
			n, _ := NewTaskExtraction(llmCfg(reg, m))
			s, payloads, err := runNode(t, n, newState(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if s.Turn.Task.Intent.Kind != tt.want {
				t.Errorf("intent %+v, want %s", s.Turn.Task.Intent, tt.want)
			}
			te := payloadsOf[TaskExtracted](payloads)
			if len(te) != 1 || te[0].Intent.Kind != tt.want {
				t.Errorf("TaskExtracted %+v", te)
			}
			overruled := slices.ContainsFunc(payloadsOf[Status](payloads), func(s Status) bool { return strings.Contains(s.Text, "nothing will be changed") })
			if overruled != tt.status {
				t.Errorf("overruling reported %v, want %v", overruled, tt.status)
			}
		})
	}
	m := llmtest.New().Script(llm.RoleTaskExtraction, llmtest.Text(`{"task": "x", "intent": {"kind": "write"}}`))
	n, _ := NewTaskExtraction(llmCfg(reg, m))
	_, _, err := runNode(t, n, newState("x"))
	if c := classification(t, n, err); c.Severity != capabilities.Retriable || c.Kind != capabilities.KindFormat ||
		!strings.Contains(c.Metadata[MetaParseError].(string), `"intent.kind"`) || !strings.Contains(c.Metadata[MetaExpectedShape].(string), `"intent"`) {
		t.Errorf("a bad intent: %s/%s %v", c.Severity, c.Kind, c.Metadata)
	}
}

func TestOfflineTaskRecordsIntent(t *testing.T) {
	n, _ := NewTaskExtraction(cfgFor(controlRoom(t)))
	s, payloads, err := runNode(t, n, newState("please set Q1 to 105 A"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Turn.Task.Intent.Summary(); got != "change: Q1 to 105 A" {
		t.Errorf("intent %q", got)
	}
	if te := payloadsOf[TaskExtracted](payloads); len(te) != 1 || !te[0].Offline || !te[0].Intent.IsChange() {
		t.Errorf("TaskExtracted %+v", te)
	}
	// Skipping task extraction still records the intent.
	st := newState("What would happen if I set Q1 to 105 A?")
	st.Turn.Options.SkipTaskExtraction = true
	if s, _, _ := runNode(t, n, st); s.Turn.Task.Intent.Kind != state.IntentHypothetical {
		t.Errorf("skip: intent %+v", s.Turn.Task.Intent)
	}
}

func intent(kind state.IntentKind, changes ...state.RequestedChange) state.Intent {
	return state.Intent{Kind: kind, Changes: changes}
}

func TestCheckIntent(t *testing.T) {
	reg := sideEffectRegistry(t)
	find := capabilities.PlannedStep{ContextKey: "ch", Capability: "channel_finding", TaskObjective: "Find the BTS Q1 quadrupole", ExpectedOutput: "CHANNEL_ADDRESSES",
		Parameters: map[string]any{"query": "BTS quadrupole Q1 current"}}
	findQ2 := find
	findQ2.Parameters = map[string]any{"query": "BTS quadrupole Q2 current"}
	findQ2.TaskObjective = "Find the BTS Q2 quadrupole"
	write := func(objective string, params map[string]any) capabilities.PlannedStep {
		return capabilities.PlannedStep{ContextKey: "w", Capability: "channel_write", TaskObjective: objective, ExpectedOutput: "CHANNEL_WRITE_RESULTS",
			Parameters: params, Inputs: []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "ch"}}}
	}
	q1 := intent(state.IntentChange, rc("the quadrupole Q1 current in the BTS line", 105, "A"))
	store := capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "earlier", Turn: 1,
		TaskObjective: "Find the Q1 channel", Summary: "BTS:MAG:Q1:CURRENT", Value: json.RawMessage(`{"channels": ["BTS:MAG:Q1:CURRENT"]}`)})
	fromStore := write("Set it to 105 A", nil)
	fromStore.Inputs = []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "earlier"}}

	for _, tt := range []struct {
		name   string
		intent state.Intent
		steps  []capabilities.PlannedStep
		cause  error // nil: accepted
		says   string
	}{
		{"read question, no write", intent(state.IntentRead), []capabilities.PlannedStep{find}, nil, ""},
		{"read question, a write", intent(state.IntentRead), []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 105 A", map[string]any{"value": 105})},
			state.ErrNoChangeIntent, "step 2 (channel_write) would change the outside world, but the user did not ask for a change (the request reads as read)"},
		{"hypothetical, a write", intent(state.IntentHypothetical), []capabilities.PlannedStep{find, write("Set Q1 to 105 A", nil)}, state.ErrNoChangeIntent, "reads as hypothetical"},
		{"the stated change", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 105 A", map[string]any{"value": 105})}, nil, ""},
		{"value from the objective", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 105 A", nil)}, nil, ""},
		{"value as text with a unit", q1, []capabilities.PlannedStep{find, write("Set it", map[string]any{"value": "0.105 kA"})}, nil, ""},
		{"value not stated yet", q1, []capabilities.PlannedStep{find, write("Write the requested value", nil)}, nil, ""},
		{"another value", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 150 A", map[string]any{"value": 150})},
			state.ErrIntentMismatch, "step 2 (channel_write) is not the change the user asked for"},
		{"another value in the objective", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 150 A", nil)}, state.ErrIntentMismatch, "150 A"},
		{"another target via the finding query", q1, []capabilities.PlannedStep{findQ2, write("Set the current to 105 A", map[string]any{"value": 105})}, state.ErrIntentMismatch, "Q1 is not its target"},
		{"values map right", q1, []capabilities.PlannedStep{find, write("Set it", map[string]any{"values": map[string]any{"BTS:MAG:Q1:CURRENT": 105.0}})}, nil, ""},
		{"values map wrong channel", q1, []capabilities.PlannedStep{find, write("Set it", map[string]any{"values": map[string]any{"BTS:MAG:Q2:CURRENT": 105.0}})}, state.ErrIntentMismatch, "BTS:MAG:Q2:CURRENT"},
		{"target from the context store", q1, []capabilities.PlannedStep{fromStore}, nil, ""},
		{"change without stated details", intent(state.IntentChange), []capabilities.PlannedStep{find, write("Set anything to 1", nil)}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pe := checkIntent(tt.steps, reg, store, tt.intent)
			if tt.cause == nil {
				if pe != nil {
					t.Fatalf("rejected: %v", pe)
				}
				return
			}
			if pe == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(pe, ErrUnrequestedChange) || !errors.Is(pe, tt.cause) || !strings.Contains(pe.Error(), tt.says) {
				t.Errorf("error %v, want %v saying %q", pe, tt.cause, tt.says)
			}
			ce := pe.capabilityError()
			if ce.Severity != capabilities.Replanning || ce.Metadata[capabilities.MetaReplanningReason] != pe.Problem {
				t.Errorf("classification %+v", ce)
			}
		})
	}
}

// A human's edited plan is held to the intent too.
func TestValidatePlanEditedWriteForARead(t *testing.T) {
	reg := sideEffectRegistry(t)
	s := withTask("What is the Q1 current?")
	steps := []capabilities.PlannedStep{
		{ContextKey: "ch", Capability: "channel_finding", TaskObjective: "find Q1", ExpectedOutput: "CHANNEL_ADDRESSES"},
		{ContextKey: "w", Capability: "channel_write", TaskObjective: "set Q1 to 105 A", Inputs: []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "ch"}}}}
	_, err := ValidatePlan(steps, reg, nil, s.Turn)
	var pe *PlanError
	if !errors.As(err, &pe) || pe.Step != 1 || !errors.Is(err, state.ErrNoChangeIntent) {
		t.Fatalf("err %v", err)
	}
	s.Turn.Task.Intent = intent(state.IntentChange, rc("Q1", 105, "A"))
	got, err := ValidatePlan(steps, reg, nil, s.Turn)
	if err != nil || len(got) != 3 || got[2].Capability != state.NodeRespond {
		t.Fatalf("a change: %v %v", got, err)
	}
}

func TestClassifierWithholdsSideEffects(t *testing.T) {
	reg := sideEffectRegistry(t)
	t.Run("offline read", func(t *testing.T) {
		n, _ := NewClassifier(cfgFor(reg))
		s, payloads, err := runNode(t, n, withTask("Write a new setpoint to the channel?"))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(s.Turn.ActiveCapabilities, "channel_write") {
			t.Errorf("active %v", s.Turn.ActiveCapabilities)
		}
		if sel := payloadsOf[CapabilitiesSelected](payloads); len(sel) != 1 || slices.Contains(sel[0].Capabilities, "channel_write") {
			t.Errorf("selected %+v", sel)
		}
	})
	t.Run("offline change", func(t *testing.T) {
		n, _ := NewClassifier(cfgFor(reg))
		st := withTask("Write a new setpoint of 105 A to the channel")
		st.Turn.Task.Intent = intent(state.IntentChange, rc("the channel", 105, "A"))
		s, _, err := runNode(t, n, st)
		if err != nil || !slices.Contains(s.Turn.ActiveCapabilities, "channel_write") {
			t.Errorf("active %v err %v", s.Turn.ActiveCapabilities, err)
		}
	})
	t.Run("model selects a write for a read", func(t *testing.T) {
		m := llmtest.New().Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": ["channel_write"]}`))
		n, _ := NewClassifier(llmCfg(reg, m))
		s, payloads, err := runNode(t, n, withTask("What is the Q1 setpoint?"))
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(s.Turn.ActiveCapabilities, "channel_write") {
			t.Errorf("active %v", s.Turn.ActiveCapabilities)
		}
		if sel := payloadsOf[CapabilitiesSelected](payloads); len(sel) != 1 || !slices.Equal(sel[0].Withheld, []string{"channel_write"}) {
			t.Errorf("selected %+v", sel)
		}
	})
	t.Run("skip classification", func(t *testing.T) {
		n, _ := NewClassifier(cfgFor(reg))
		st := withTask("anything")
		st.Turn.Options.SkipClassification = true
		s, _, _ := runNode(t, n, st)
		if slices.Contains(s.Turn.ActiveCapabilities, "channel_write") || !slices.Contains(s.Turn.ActiveCapabilities, "channel_finding") {
			t.Errorf("active %v", s.Turn.ActiveCapabilities)
		}
	})
}

// A side-effecting capability is never a provider added for a read: the
// dependency is satisfied by another provider, or not at all.
func TestDependencyExpansionSkipsSideEffectingProviders(t *testing.T) {
	reg := capabilities.NewRegistry()
	mk := func(name string, side bool, provides, requires string) capabilities.Capability {
		d := capabilities.Definition{Name: name, Description: name, SideEffects: side, Provides: []string{provides},
			Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, nil
			}}
		if requires != "" {
			d.Requires = []capabilities.Requirement{{Type: requires}}
		}
		c, err := capabilities.Define(d)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if err := reg.Register(mk("arm_and_fetch", true, "DATA", ""), mk("fetch", false, "DATA", ""), mk("report", false, "REPORT", "DATA")); err != nil {
		t.Fatal(err)
	}
	all, added := expandDependencies(reg, []string{"report"}, nil, false, allowedFor(reg, state.Intent{}))
	if !slices.Equal(all, []string{"fetch", "report"}) || !slices.Equal(added, []string{"fetch"}) {
		t.Errorf("read: all %v added %v", all, added)
	}
	all, _ = expandDependencies(reg, []string{"report"}, nil, false, allowedFor(reg, intent(state.IntentChange)))
	if !slices.Equal(all, []string{"arm_and_fetch", "report"}) {
		t.Errorf("change: all %v", all)
	}
	steps, _ := dependencyPlan(reg, []string{"arm_and_fetch", "report", "respond"}, nil, "report", 1, state.Intent{})
	for _, st := range steps {
		if st.Capability == "arm_and_fetch" {
			t.Errorf("the offline planner planned a side effect for a read: %+v", steps)
		}
	}
}

// The rules never panic, whatever the bytes, and their findings hold
// together: only a change has changes and a change is never firm, and every
// target is a piece of the message.
func FuzzOfflineIntent(f *testing.F) {
	for _, s := range []string{"Set the quadrupole Q1 current in the BTS line to 105 A", "Don't change anything", "ɐ set Q1 → 1e400 A",
		"set -", "to to to 5", "write 5 to", "turn off", "\xff\xfeset Q1 to 5", "Set Q1 to 105 A and Q2 to 98 A, Q3 to 1.5e2 mA",
		"what would happen if", "sett Q1=.5", "and Q2 to 98 A?", strings.Repeat("set Q1 to 1 and ", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		r := offlineIntent(msg)
		if r.intent.IsChange() == r.firm && r.intent.IsChange() {
			t.Errorf("a firm change: %+v", r)
		}
		if !r.intent.IsChange() && len(r.intent.Changes) > 0 {
			t.Errorf("changes without a change: %+v", r)
		}
		for _, c := range r.intent.Changes {
			if !strings.Contains(msg, c.Target) {
				t.Errorf("target %q is not in the message", c.Target)
			}
		}
	})
}

// BenchmarkOfflineIntent: the rules on a typical request and on a 90 kB
// message (they are linear in its length).
func BenchmarkOfflineIntent(b *testing.B) {
	for name, msg := range map[string]string{
		"request": "Could you please set the quadrupole Q1 current in the BTS line to 105 A and Q2 to 98 A?",
		"90kB":    strings.Repeat("set Q1 to 5 A, ", 6000),
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				offlineIntent(msg)
			}
		})
	}
}

// With structured output the model is held to the intent's shape: a kind
// from the three, changes with a target, a numeric (or null) value and a
// unit; strict, so the intent is always present (null when the model has
// none).
func TestTaskReplySchemaHasTheIntent(t *testing.T) {
	sc := taskReply.schema()
	b, err := json.Marshal(sc.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"intent":{"anyOf":[{"additionalProperties":false,"properties":{"changes"`,
		`"kind":{"enum":["read","change","hypothetical"],"type":"string"}`, `"value":{"anyOf":[{"type":"number"},{"type":"null"}]}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema lacks %s:\n%s", want, b)
		}
	}
	if !sc.Strict {
		t.Error("the task reply schema is not strict")
	}
}
