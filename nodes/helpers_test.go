package nodes

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/state"
)

var testNow = time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)

type capSpec struct {
	name, desc string
	provides   []string
	requires   []string
	guide      *capabilities.ClassifierGuide
	planGuide  *capabilities.OrchestratorGuide
}

func mustCap(t testing.TB, s capSpec) capabilities.Capability {
	t.Helper()
	var req []capabilities.Requirement
	for _, r := range s.requires {
		req = append(req, capabilities.Requirement{Type: r})
	}
	c := capabilities.Define(capabilities.Definition{Name: s.name, Description: s.desc, Provides: s.provides, Requires: req,
		ClassifierGuide: s.guide, OrchestratorGuide: s.planGuide,
		Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, nil
		}})
	return c
}

func ex(q string, r bool) capabilities.ClassifierExample {
	return capabilities.ClassifierExample{Query: q, Result: r}
}

// controlRoom mirrors the control-room example's capabilities (descriptions
// and classifier guides) so the offline strategies are tested on them.
func controlRoom(t testing.TB) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	err := reg.Register(
		mustCap(t, capSpec{name: "channel_finding", provides: []string{"CHANNEL_ADDRESSES"},
			desc: `Find the control-system channel names (process variable addresses) that match a description such as "beam current" or "vacuum in sector 3".`,
			guide: &capabilities.ClassifierGuide{
				Instructions: "Select when the user refers to accelerator quantities or devices by description and their channel names must be found first, or asks which channels exist.",
				Examples: []capabilities.ClassifierExample{ex("What is the beam current?", true), ex("Which channels measure the vacuum in sector 3?", true),
					ex("Show me the RF cavity voltage over the last 2 hours", true), ex("Read SR:DCCT:CURRENT", false), ex("What is a storage ring?", false)}},
			planGuide: &capabilities.OrchestratorGuide{Priority: 1, Instructions: "Use channel_finding first whenever a later step needs channel names.",
				Examples: []capabilities.OrchestratorExample{{Scenario: "find the beam current channel",
					Step: capabilities.PlannedStep{ContextKey: "beam_current_channels", Capability: "channel_finding", TaskObjective: "Find the beam current channel", ExpectedOutput: "CHANNEL_ADDRESSES"}}}},
		}),
		mustCap(t, capSpec{name: "channel_read", provides: []string{"CHANNEL_VALUES"}, requires: []string{"CHANNEL_ADDRESSES"},
			desc: "Read the present live value of control-system channels now: what is the beam current, the vacuum pressure, a temperature or a magnet reading at this moment.",
			guide: &capabilities.ClassifierGuide{
				Instructions: "Select when the user wants the present, live value of one or more machine quantities (not their history, not changing them).",
				Examples: []capabilities.ClassifierExample{ex("What is the beam current?", true), ex("What is the vacuum pressure in sector 3?", true),
					ex("Read SR:RF:CAV1:VOLT", true), ex("Show me the beam lifetime over the last day", false), ex("Set the Q1 current to 105 A", false)}},
			planGuide: &capabilities.OrchestratorGuide{Priority: 2, Instructions: "Use channel_read for present values."},
		}),
		mustCap(t, capSpec{name: "archiver_retrieval", provides: []string{"ARCHIVER_DATA"}, requires: []string{"CHANNEL_ADDRESSES"},
			desc: "Retrieve archived history of channels over a past time range (last hours, since yesterday) with min, max, mean and standard deviation: trends and how values changed over time.",
			guide: &capabilities.ClassifierGuide{
				Instructions: "Select when the user asks about the past: history, trends, statistics, or values over a time range.",
				Examples: []capabilities.ClassifierExample{ex("Show me the RF cavity voltage over the last 2 hours", true), ex("How did the beam lifetime change since yesterday?", true),
					ex("What was the average vacuum pressure in sector 3 during the last day?", true), ex("What is the beam current?", false)}},
		}),
		mustCap(t, capSpec{name: "channel_write", provides: []string{"CHANNEL_WRITE_RESULTS"}, requires: []string{"CHANNEL_ADDRESSES"},
			desc: "Write a new setpoint to a control-system channel: set, change or adjust a setting to a number the user gives. A human must approve first.",
			guide: &capabilities.ClassifierGuide{
				Instructions: "Select only when the user explicitly asks to set, change, adjust or write a value on the machine.",
				Examples: []capabilities.ClassifierExample{ex("Set the quadrupole Q1 current in the BTS line to 105 A", true), ex("Change the RF cavity 2 voltage to 610 kV", true),
					ex("What is the Q1 current?", false), ex("Was the RF voltage changed yesterday?", false)}},
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// weather mirrors the weather example: one capability for current weather
// and one for a forecast, both needing a location.
func weather(t testing.TB) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	err := reg.Register(
		mustCap(t, capSpec{name: "location_lookup", provides: []string{"LOCATION"},
			desc: "Resolve a city or place name to coordinates."}),
		mustCap(t, capSpec{name: "current_weather", provides: []string{"WEATHER"}, requires: []string{"LOCATION"},
			desc: "Current weather conditions (temperature, wind, rain) at a location right now.",
			guide: &capabilities.ClassifierGuide{Instructions: "Select when the user asks about the weather, temperature, wind or rain now.",
				Examples: []capabilities.ClassifierExample{ex("What's the weather in Berlin?", true), ex("Is it raining in Paris?", true), ex("How warm is it in Rome today?", true)}}}),
		mustCap(t, capSpec{name: "forecast", provides: []string{"FORECAST"}, requires: []string{"LOCATION"},
			desc: "Weather forecast for the coming days at a location.",
			guide: &capabilities.ClassifierGuide{Instructions: "Select when the user asks about tomorrow, the weekend or the coming days.",
				Examples: []capabilities.ClassifierExample{ex("Will it rain in Berlin tomorrow?", true), ex("What's the forecast for the weekend in Oslo?", true),
					ex("What's the weather in Berlin?", false)}}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func newState(input string, prev ...string) state.State {
	var s state.State
	for i := 0; i+1 < len(prev); i += 2 {
		s = state.NewTurn(s, prev[i], state.Options{}, testNow)
		s.Messages = append(s.Messages, state.Message{Role: state.RoleAssistant, Content: prev[i+1], Turn: s.Turn.Number})
	}
	return state.NewTurn(s, input, state.Options{}, testNow)
}

func apply(t testing.TB, s state.State, u state.Update) state.State {
	t.Helper()
	out, err := state.Apply(s, u)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// execute simulates the capability steps of the plan: every pending
// non-terminal step is done and stores a context entry with its summary.
func execute(t testing.TB, s state.State, summary func(step capabilities.PlannedStep) string) state.State {
	t.Helper()
	for i, st := range s.Turn.Plan.Steps {
		if isTerminal(st.Capability) {
			continue
		}
		st.Status = state.StepDone
		st.Attempts = 1
		typ := st.ExpectedOutput
		v, _ := json.Marshal(map[string]string{"step": st.ContextKey})
		s = apply(t, s, state.Update{
			Step: &state.StepUpdate{Plan: s.Turn.Plan.Number, Index: i, Step: st,
				Result: &state.StepResult{StepIndex: i, Capability: st.Capability, Success: true, Attempt: 1, Plan: s.Turn.Plan.Number}},
			Context: []capabilities.ContextEntry{{Type: typ, Key: st.ContextKey, Value: v, Summary: summary(st.PlannedStep),
				Capability: st.Capability, Turn: s.Turn.Number, Created: testNow}},
		})
	}
	return s
}

// cfgFor is a node config whose nodes ask their model (when they have
// one) on every turn, as before issue 29: the unit tests of a node's model
// calls; the decisions to leave calls out are tested in needs_test.go.
func cfgFor(reg *capabilities.Registry) Config {
	return Config{Registry: reg, Now: func() time.Time { return testNow }, TaskExtraction: TaskAlways, SelectAllWithinTokens: -1, SeparateTaskAndSelection: true}
}
