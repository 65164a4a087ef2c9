package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

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
		want         intent.Kind
		status       bool // the overruling is reported
	}{
		{"Set Q1 to 105 A", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 105, "unit": "A"}]}}`, intent.KindChange, false},
		{"Setze Q1 auf 105 A", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 105, "unit": "A"}]}}`, intent.KindChange, false},
		{"What would happen if I set Q1 to 105 A?", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "Q1", "value": 105, "unit": "A"}]}}`, intent.KindHypothetical, true},
		{"Don't change anything, what is Q1?", `<think>The user wants Q1 at 105.</think>{"task": "Set Q1 to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change"}}`, intent.KindRead, true},
		{"Set Q1 to 105 A", `{"task": "Set Q1 to 105 A", "depends_on_chat_history": false}`, intent.KindChange, false},
		{"What is Q1?", `{"task": "What is Q1?", "depends_on_chat_history": false}`, intent.KindRead, false},
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
	if s, _, _ := runNode(t, n, st); s.Turn.Task.Intent.Kind != intent.KindHypothetical {
		t.Errorf("skip: intent %+v", s.Turn.Task.Intent)
	}
}

func kindIntent(kind intent.Kind, changes ...intent.RequestedChange) intent.Intent {
	return intent.Intent{Kind: kind, Changes: changes}
}

// rc is a requested change for tables.
func rc(target string, value float64, unit string) intent.RequestedChange {
	return intent.RequestedChange{Target: target, Unit: unit, Value: &value}
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
	q1 := kindIntent(intent.KindChange, rc("the quadrupole Q1 current in the BTS line", 105, "A"))
	store := capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "earlier", Turn: 1,
		TaskObjective: "Find the Q1 channel", Summary: "BTS:MAG:Q1:CURRENT", Value: json.RawMessage(`{"channels": ["BTS:MAG:Q1:CURRENT"]}`)})
	fromStore := write("Set it to 105 A", nil)
	fromStore.Inputs = []capabilities.InputRef{{Type: "CHANNEL_ADDRESSES", Key: "earlier"}}

	for _, tt := range []struct {
		name   string
		intent intent.Intent
		steps  []capabilities.PlannedStep
		cause  error // nil: accepted
		says   string
	}{
		{"read question, no write", kindIntent(intent.KindRead), []capabilities.PlannedStep{find}, nil, ""},
		{"read question, a write", kindIntent(intent.KindRead), []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 105 A", map[string]any{"value": 105})},
			intent.ErrNoChange, "step 2 (channel_write) would change the outside world, but the user did not ask for a change (the request reads as read)"},
		{"hypothetical, a write", kindIntent(intent.KindHypothetical), []capabilities.PlannedStep{find, write("Set Q1 to 105 A", nil)}, intent.ErrNoChange, "reads as hypothetical"},
		{"the stated change", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 105 A", map[string]any{"value": 105})}, nil, ""},
		{"value from the objective", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 105 A", nil)}, nil, ""},
		{"value as text with a unit", q1, []capabilities.PlannedStep{find, write("Set it", map[string]any{"value": "0.105 kA"})}, nil, ""},
		{"value not stated yet", q1, []capabilities.PlannedStep{find, write("Write the requested value", nil)}, nil, ""},
		{"another value", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 150 A", map[string]any{"value": 150})},
			intent.ErrMismatch, "step 2 (channel_write) is not the change the user asked for"},
		{"another value in the objective", q1, []capabilities.PlannedStep{find, write("Set BTS:MAG:Q1:CURRENT to 150 A", nil)}, intent.ErrMismatch, "150 A"},
		{"another target via the finding query", q1, []capabilities.PlannedStep{findQ2, write("Set the current to 105 A", map[string]any{"value": 105})}, intent.ErrMismatch, "Q1 is not its target"},
		{"values map right", q1, []capabilities.PlannedStep{find, write("Set it", map[string]any{"values": map[string]any{"BTS:MAG:Q1:CURRENT": 105.0}})}, nil, ""},
		{"values map wrong channel", q1, []capabilities.PlannedStep{find, write("Set it", map[string]any{"values": map[string]any{"BTS:MAG:Q2:CURRENT": 105.0}})}, intent.ErrMismatch, "BTS:MAG:Q2:CURRENT"},
		{"target from the context store", q1, []capabilities.PlannedStep{fromStore}, nil, ""},
		{"change without stated details", kindIntent(intent.KindChange), []capabilities.PlannedStep{find, write("Set anything to 1", nil)}, intent.ErrMismatch, "names no change"},
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
	if !errors.As(err, &pe) || pe.Step != 1 || !errors.Is(err, intent.ErrNoChange) {
		t.Fatalf("err %v", err)
	}
	s.Turn.Task.Intent = kindIntent(intent.KindChange, rc("Q1", 105, "A"))
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
		st.Turn.Task.Intent = kindIntent(intent.KindChange, rc("the channel", 105, "A"))
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
		c := capabilities.Define(d)
		return c
	}
	if err := reg.Register(mk("arm_and_fetch", true, "DATA", ""), mk("fetch", false, "DATA", ""), mk("report", false, "REPORT", "DATA")); err != nil {
		t.Fatal(err)
	}
	all, added := expandDependencies(reg, []string{"report"}, nil, false, allowedFor(reg, intent.Intent{}))
	if !slices.Equal(all, []string{"fetch", "report"}) || !slices.Equal(added, []string{"fetch"}) {
		t.Errorf("read: all %v added %v", all, added)
	}
	all, _ = expandDependencies(reg, []string{"report"}, nil, false, allowedFor(reg, kindIntent(intent.KindChange)))
	if !slices.Equal(all, []string{"arm_and_fetch", "report"}) {
		t.Errorf("change: all %v", all)
	}
	steps, _ := dependencyPlan(reg, []string{"arm_and_fetch", "report", "respond"}, nil, "report", 1, intent.Intent{})
	for _, st := range steps {
		if st.Capability == "arm_and_fetch" {
			t.Errorf("the offline planner planned a side effect for a read: %+v", steps)
		}
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

// A model's task text asking for a change the user's words do not (a
// change for a read, another value, another target) is replaced by the
// user's words; one stating the user's change stays.
func TestTaskTextHeldToTheUsersWords(t *testing.T) {
	reg := controlRoom(t)
	for _, tt := range []struct {
		input, task, want string
	}{
		{"What is the BTS Q1 current?", "Set the BTS Q1 quadrupole current to 140 A", "What is the BTS Q1 current?"},
		{"Set the BTS Q1 current to 105 A", "Set BTS:MAG:Q1:CURRENT to 150 A", "Set the BTS Q1 current to 105 A"},
		{"Set the BTS Q1 current to 105 A", "Set BTS:MAG:Q4:CURRENT to 105 A", "Set the BTS Q1 current to 105 A"},
		{"Setze den Strom von Q1 auf 105 A", "Set the BTS Q1 quadrupole current to 105 A", "Set the BTS Q1 quadrupole current to 105 A"},
		{"What is the BTS Q1 current?", "Read the BTS Q1 quadrupole current", "Read the BTS Q1 quadrupole current"},
	} {
		t.Run(tt.input+" / "+tt.task, func(t *testing.T) {
			m := llmtest.New().Script(llm.RoleTaskExtraction, llmtest.Text(`{"task": "`+tt.task+`", "depends_on_chat_history": false}`))
			n, _ := NewTaskExtraction(llmCfg(reg, m))
			s, payloads, err := runNode(t, n, newState(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if s.Turn.Task.Text != tt.want {
				t.Errorf("task %q, want %q", s.Turn.Task.Text, tt.want)
			}
			replaced := slices.ContainsFunc(payloadsOf[Status](payloads), func(s Status) bool { return strings.Contains(s.Text, "the task is your own words") })
			if replaced != (tt.want != tt.task) {
				t.Errorf("replacement reported %v", replaced)
			}
		})
	}
}

// Offline, a change in words no capability description uses (another
// language) goes to the one capability that changes anything.
func TestClassifierChangeInAnotherLanguage(t *testing.T) {
	reg := sideEffectRegistry(t)
	n, _ := NewClassifier(cfgFor(reg))
	st := withTask("Règle la tension de la cavité 2 à 610 kV")
	st.Turn.Task.Intent = kindIntent(intent.KindChange, rc("la tension de la cavité 2", 610, "kV"))
	s, _, err := runNode(t, n, st)
	if err != nil || !slices.Contains(s.Turn.ActiveCapabilities, "channel_write") {
		t.Errorf("active %v err %v", s.Turn.ActiveCapabilities, err)
	}
	st.Turn.Task.Intent = intent.Intent{Kind: intent.KindRead}
	if s, _, _ := runNode(t, n, st); slices.Contains(s.Turn.ActiveCapabilities, "channel_write") {
		t.Errorf("a read: active %v", s.Turn.ActiveCapabilities)
	}
}
