package nodes

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// offlineTurn runs task extraction, classifier and orchestrator offline and
// returns the state with the plan.
func offlineTurn(t *testing.T, reg *capabilities.Registry, s state.State) state.State {
	t.Helper()
	set, err := New(cfgFor(reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range []Node{set.TaskExtraction, set.Classifier, set.Orchestrator} {
		u, err := n.Run(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", n.Name(), err)
		}
		s = apply(t, s, u)
	}
	return s
}

func planCaps(p *state.Plan) []string {
	var out []string
	for _, st := range p.Steps {
		out = append(out, st.Capability)
	}
	return out
}

func TestOfflineControlRoomDemoQuestions(t *testing.T) {
	reg := controlRoom(t)
	tests := []struct {
		question string
		plan     []string
	}{
		{"What is the beam current?", []string{"channel_finding", "channel_read", "respond"}},
		{"Show me the RF cavity voltage over the last 2 hours", []string{"channel_finding", "archiver_retrieval", "respond"}},
		{"What is the vacuum pressure in sector 3?", []string{"channel_finding", "channel_read", "respond"}},
		{"Set the quadrupole Q1 current in the BTS line to 105 A", []string{"channel_finding", "channel_write", "respond"}},
		{"How did the beam lifetime change since yesterday?", []string{"channel_finding", "archiver_retrieval", "respond"}},
		{"Which channels measure the vacuum in sector 3?", []string{"channel_finding", "respond"}},
		{"Change the RF cavity 2 voltage to 610 kV", []string{"channel_finding", "channel_write", "respond"}},
		{"hello, who are you?", []string{"respond"}},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			s := offlineTurn(t, reg, newState(tt.question))
			if got := planCaps(s.Turn.Plan); !slices.Equal(got, tt.plan) {
				t.Errorf("plan = %v, want %v (active %v)", got, tt.plan, s.Turn.ActiveCapabilities)
			}
		})
	}
}

func TestOfflineWeatherQuestions(t *testing.T) {
	reg := weather(t)
	tests := []struct {
		question string
		plan     []string
	}{
		{"What's the weather in Berlin?", []string{"location_lookup", "current_weather", "respond"}},
		{"Is it raining in Hamburg right now?", []string{"location_lookup", "current_weather", "respond"}},
		{"Will it rain in Oslo tomorrow?", []string{"location_lookup", "forecast", "respond"}},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			s := offlineTurn(t, reg, newState(tt.question))
			if got := planCaps(s.Turn.Plan); !slices.Equal(got, tt.plan) {
				t.Errorf("plan = %v, want %v", got, tt.plan)
			}
		})
	}
}

func TestOfflinePlanSharesProvidersAndRunsIndependentStepsTogether(t *testing.T) {
	reg := controlRoom(t)
	steps, skipped := dependencyPlan(reg, []string{"channel_finding", "channel_read", "archiver_retrieval", "respond"}, nil, "beam current now and over the last hour", 3, intent.Intent{})
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	ps := toPlanSteps(steps)
	if got := planCaps(&state.Plan{Steps: ps}); !slices.Equal(got, []string{"channel_finding", "channel_read", "archiver_retrieval", "respond"}) {
		t.Fatalf("plan %v: the shared provider must run once, first", got)
	}
	if !slices.Equal(ps[1].DependsOn, []int{0}) || !slices.Equal(ps[2].DependsOn, []int{0}) {
		t.Errorf("read and archiver must depend only on finding (and so run together): %v %v", ps[1].DependsOn, ps[2].DependsOn)
	}
	if !slices.Equal(ps[3].DependsOn, []int{0, 1, 2}) {
		t.Errorf("respond depends on %v", ps[3].DependsOn)
	}
	if ps[1].Inputs[0] != (capabilities.InputRef{Type: "CHANNEL_ADDRESSES", Key: "channel_finding_3"}) {
		t.Errorf("inputs %v", ps[1].Inputs)
	}
	if ps[0].TaskObjective == ps[1].TaskObjective {
		t.Error("a provider step's objective should say what it provides")
	}
}

func TestOfflinePlanReusesStoredContextAndSkipsUnsatisfiable(t *testing.T) {
	reg := controlRoom(t)
	store := capabilities.ContextStore{}.Put(capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "old", Turn: 1},
		capabilities.ContextEntry{Type: "CHANNEL_ADDRESSES", Key: "newer", Turn: 2})
	steps, skipped := dependencyPlan(reg, []string{"channel_read"}, store, "read them again", 3, intent.Intent{})
	if len(skipped) != 0 || len(steps) != 2 || steps[0].Inputs[0].Key != "newer" {
		t.Errorf("steps %+v skipped %v: want channel_read reading the latest stored addresses", steps, skipped)
	}
	steps, skipped = dependencyPlan(reg, []string{"channel_read"}, nil, "read", 1, intent.Intent{})
	if !slices.Equal(skipped, []string{"channel_read"}) || len(steps) != 1 || steps[0].Capability != "respond" {
		t.Errorf("steps %+v skipped %v: an unsatisfiable step is left out", steps, skipped)
	}
}

func TestOfflineTaskJoinsShortFollowUps(t *testing.T) {
	tests := []struct {
		name  string
		s     state.State
		want  string
		joint bool
	}{
		{"first message", newState("What is the beam current?"), "What is the beam current?", false},
		{"short follow-up", newState("and the RF voltage?", "What is the beam current?", "500 mA"),
			"What is the beam current? — follow-up: and the RF voltage?", true},
		{"pronoun", newState("plot it", "Show the beam current history", "..."), "Show the beam current history — follow-up: plot it", true},
		{"new short question", newState("What is the beam current?", "Show the RF voltage", "..."), "What is the beam current?", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := offlineTask(tt.s)
			if got.Text != tt.want || got.DependsOnHistory != tt.joint {
				t.Errorf("task = %+v, want %q (depends %v)", got, tt.want, tt.joint)
			}
		})
	}
}

func TestOfflineRespondSummarisesResults(t *testing.T) {
	reg := controlRoom(t)
	s := offlineTurn(t, reg, newState("What is the beam current?"))
	s = execute(t, s, func(st capabilities.PlannedStep) string {
		if st.Capability == "channel_read" {
			return "SR:DCCT:CURRENT = 500.2 mA"
		}
		return "found SR:DCCT:CURRENT"
	})
	// The read step recovered after a retry: the answer must say so.
	st := s.Turn.Plan.Steps[1]
	st.Recovered, st.Attempts = true, 2
	s.Turn.Plan.Steps[1] = st
	n, _ := NewRespond(cfgFor(reg))
	u, err := n.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	s = apply(t, s, u)
	msg, _ := s.LastAssistant()
	for _, want := range []string{OfflineNotice, "SR:DCCT:CURRENT = 500.2 mA", "found SR:DCCT:CURRENT", "channel_read succeeded after 2 attempts"} {
		if !strings.Contains(msg.Content, want) {
			t.Errorf("answer lacks %q:\n%s", want, msg.Content)
		}
	}
	if !s.Turn.Done || msg.Kind != state.KindAnswer || s.Turn.Plan.Steps[2].Status != state.StepDone {
		t.Errorf("done %v kind %s respond step %s", s.Turn.Done, msg.Kind, s.Turn.Plan.Steps[2].Status)
	}
}

func TestOfflineConversationalAnswerListsCapabilities(t *testing.T) {
	reg := controlRoom(t)
	s := offlineTurn(t, reg, newState("hello, who are you?"))
	n, _ := NewRespond(cfgFor(reg))
	u, err := n.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	msg := u.Messages[0].Content
	for _, want := range []string{"offline mode", "channel_read", "archiver_retrieval"} {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(want)) {
			t.Errorf("answer lacks %q:\n%s", want, msg)
		}
	}
}

func TestOfflineClarify(t *testing.T) {
	reg := controlRoom(t)
	n, _ := NewClarify(cfgFor(reg))
	u, err := n.Run(context.Background(), newState("do the thing"))
	if err != nil {
		t.Fatal(err)
	}
	q := parseQuestions(u.Messages[0].Content)
	if len(q) < 1 || len(q) > 4 || u.Messages[0].Kind != state.KindClarification || !u.Turn.Done {
		t.Errorf("clarification %q", u.Messages[0].Content)
	}
}

// A step that only prepares another's input is shown to users in the plan:
// its objective says what it does in words (the lead clause of the
// capability's description, else its provided types in words), never a
// context type's identifier, and keeps the task verbatim for capabilities
// that read it.
func TestOfflinePlanProviderStepsInUsersWords(t *testing.T) {
	reg := controlRoom(t)
	for _, task := range []string{"Show me the RF cavity voltage over the last 2 hours", "wat is teh beam curent", "vacuum sector 3 and 4?"} {
		steps, _ := dependencyPlan(reg, []string{"channel_finding", "archiver_retrieval", "respond"}, nil, task, 1, intent.Intent{})
		if len(steps) != 3 || steps[0].Capability != "channel_finding" {
			t.Fatalf("%q: plan %+v", task, steps)
		}
		got := steps[0].TaskObjective
		if got != "Find the control-system channel names for: "+task {
			t.Errorf("%q: provider objective %q", task, got)
		}
		if steps[1].TaskObjective != task {
			t.Errorf("%q: the goal step's objective is the task, got %q", task, steps[1].TaskObjective)
		}
	}
	for _, tc := range []struct{ desc, want string }{
		{"", "Get the channel addresses for: t"},
		{"   ", "Get the channel addresses for: t"},
		{"Looks up channels.", "Looks up channels for: t"},
		{"Reads things: the beam, the vacuum.", "Reads things for: t"},
		{strings.Repeat("very long description without any break at all ", 4), "Get the channel addresses for: t"},
	} {
		c := mustCap(t, capSpec{name: "finder", provides: []string{"CHANNEL_ADDRESSES"}, desc: tc.desc})
		if got := providerObjective(c, "t"); got != tc.want {
			t.Errorf("description %q: objective %q, want %q", tc.desc, got, tc.want)
		}
	}
}
