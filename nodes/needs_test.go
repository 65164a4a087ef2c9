package nodes

import (
	"context"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/state"
)

// The rules that decide whether a message needs the earlier turns: a first
// message never does; a later one that names what it asks about does not;
// one that refers back, continues, answers the assistant, is too short to
// tell or is in a script the rules do not read does. Each says why.
func TestHistoryNeed(t *testing.T) {
	earlier := []string{"What is the beam current?", "The beam current is 500.2 mA."}
	changed := []string{"Set the BTS Q1 quadrupole current to 105 A", "Q1 is now 105 A."}
	for _, tt := range []struct {
		msg   string
		prev  []string
		need  bool
		cause string
	}{
		{"What is the beam current?", nil, false, "first message"},
		{"show its history", nil, false, "first message"}, // nothing to refer to
		{"What is the vacuum pressure in sector 3?", earlier, false, "names what it asks about"},
		{"Show me the RF cavity voltage over the last 2 hours", earlier, false, "names what it asks about"},
		{"Set the quadrupole Q1 current in the BTS line to 105 A", earlier, false, "names what it asks about"},
		{"Is it raining in Paris today?", earlier, false, "names what it asks about"},
		{"Was ist der Strahlstrom im Speicherring?", earlier, false, "names what it asks about"},
		{"show its history over the last hour", earlier, true, `"its"`},
		{"What was it an hour ago?", earlier, true, `"it"`},
		{"Plot that for the last day", earlier, true, `"that"`},
		{"Read the beam current again please", earlier, true, `"again"`},
		{"and the RF voltage in sector 2?", earlier, true, `starts with "and"`},
		{"what about the vacuum in sector 4?", earlier, true, `"what about"`},
		{"and Q2 to 98 A", changed, true, "continues an earlier change"},
		{"why?", earlier, true, `"why"`},
		{"the RF voltage?", earlier, true, "too short"},
		{"Wie hoch ist es jetzt im Speicherring?", earlier, true, `"es"`},
		{"Und der Vakuumdruck in Sektor 3?", earlier, true, `"und"`},
		{"Et la tension RF du secteur 2 ?", earlier, true, `"et"`},
		{"Какой ток пучка сейчас в кольце?", earlier, true, "script"},
		{"Set the Q1 current to 105 A", []string{"Which quadrupole do you mean?", "1. Q1 in the BTS line?"}, true, "question"},
	} {
		s := newState(tt.msg, tt.prev...)
		need, why := historyNeed(s)
		if need != tt.need || !strings.Contains(why, tt.cause) {
			t.Errorf("%q after %q: need %v (%s), want %v (%s)", tt.msg, tt.prev, need, why, tt.need, tt.cause)
		}
	}
	// The assistant's clarifying questions are answered by the next message.
	s := newState("BTS line, the first one", "show Q1", "")
	s.Messages[1] = state.Message{Role: state.RoleAssistant, Kind: state.KindClarification, Content: "1. Which line?", Turn: 1}
	if need, why := historyNeed(s); !need || !strings.Contains(why, "answers the assistant's questions") {
		t.Errorf("an answer to a clarification: need %v (%s)", need, why)
	}
}

// The classifier selects every candidate without its model only while the
// planner's prompt with all their guides fits the budget, the turn is not
// recovering from a failure and the caller may use them all; otherwise it
// says why it asks.
func TestSelectAllDecision(t *testing.T) {
	reg := controlRoom(t)
	cfg := cfgFor(reg)
	cfg.Models = llmtest.New()
	read := intent.Intent{Kind: intent.KindRead}
	for _, tt := range []struct {
		name   string
		budget int
		turn   func(*state.Turn)
		ctx    func(context.Context) context.Context
		all    bool
		why    string
	}{
		{"fits", 0, nil, nil, true, "all 4 capabilities fit the planner's prompt"},
		{"over the budget", 300, nil, nil, false, "over 300: asking the model"},
		{"never", -1, nil, nil, false, ""},
		{"after a reclassification", 0, func(t *state.Turn) { t.Control.Reclassifications = 1 }, nil, false, "asked again after a failure"},
		{"recovering", 0, func(t *state.Turn) { t.Control.Error = &state.ErrorInfo{Node: "orchestrator"} }, nil, false, "asked again after a failure"},
		{"a restricted caller", 0, nil, func(ctx context.Context) context.Context {
			return WithAllowed(ctx, func(name string) bool { return name != "archiver_retrieval" })
		}, false, "may not use archiver_retrieval"},
	} {
		c := cfg
		c.SelectAllWithinTokens = tt.budget
		n, err := NewClassifier(c)
		if err != nil {
			t.Fatal(err)
		}
		var turn state.Turn
		if tt.turn != nil {
			tt.turn(&turn)
		}
		ctx := context.Background()
		if tt.ctx != nil {
			ctx = tt.ctx(ctx)
		}
		all, why := n.selectAll(ctx, turn, n.candidates(read))
		if all != tt.all || !strings.Contains(why, tt.why) || (tt.why == "" && why != "") {
			t.Errorf("%s: all %v (%q), want %v (%q)", tt.name, all, why, tt.all, tt.why)
		}
	}
	// For a read the side-effecting capability is no candidate, so the
	// prompt measured is the one the planner gets: smaller than a change's.
	cfg.Registry = sideEffectRegistry(t)
	n, _ := NewClassifier(cfg)
	change := intent.Intent{Kind: intent.KindChange}
	if r, c := n.plannerTokens(n.candidates(read)), n.plannerTokens(n.candidates(change)); r <= 0 || c <= r {
		t.Errorf("planner prompt %d tokens for a read, %d for a change", r, c)
	}
}

// Task extraction leaves the task to the classifier's one call exactly
// when both would ask their model, the classifier is batched and the
// configuration does not keep the calls apart.
func TestTaskDeferred(t *testing.T) {
	reg := controlRoom(t)
	followUp := newState("show its history over the last hour", "What is the beam current?", "500 mA.")
	first := newState("What is the beam current?")
	for _, tt := range []struct {
		name string
		s    state.State
		set  func(*Config)
		want bool
	}{
		{"follow-up, guides over the budget", followUp, func(c *Config) { c.SelectAllWithinTokens = 100 }, true},
		{"follow-up, guides fit", followUp, func(c *Config) { c.SelectAllWithinTokens = 0 }, false},
		{"first message", first, func(c *Config) { c.SelectAllWithinTokens = 100 }, false},
		{"first message, task always asked", first, func(c *Config) { c.SelectAllWithinTokens, c.TaskExtraction = 100, TaskAlways }, true},
		{"kept apart", followUp, func(c *Config) { c.SelectAllWithinTokens, c.SeparateTaskAndSelection = 100, true }, false},
		{"per capability", followUp, func(c *Config) { c.SelectAllWithinTokens, c.ClassifierMode = 100, PerCapability }, false},
		{"no classifier model", followUp, func(c *Config) {
			c.SelectAllWithinTokens, c.Models = 100, llmtest.New().Only("task_extraction", "orchestrator")
		}, false},
	} {
		c := cfgFor(reg)
		c.TaskExtraction, c.SeparateTaskAndSelection = "", false
		c.Models = llmtest.New()
		tt.set(&c)
		n, err := NewTaskExtraction(c)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.taskDeferred(context.Background(), tt.s, rulesIntent(tt.s)); got != tt.want {
			t.Errorf("%s: deferred %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The combined reply is read as strictly as its parts, through what real
// models wrap around it.
func TestParseTaskSelection(t *testing.T) {
	good := `{"task": "Show the beam current history over the last hour", "depends_on_chat_history": true, "intent": {"kind": "read", "changes": []}, "capabilities": ["channel_finding", "archiver_retrieval"]}`
	for _, reply := range []string{
		good,
		"```json\n" + good + "\n```",
		"Here you go:\n" + good + "\nAnything else?",
		"<think>The user wants {\"task\": \"draft\"} maybe.</think>\n" + good,
	} {
		task, names, err := parseTaskSelection(reply)
		if err != nil || task.Text != "Show the beam current history over the last hour" || !task.DependsOnHistory ||
			len(names) != 2 || names[1] != "archiver_retrieval" {
			t.Errorf("%.40q: task %+v, names %v, err %v", reply, task, names, err)
		}
	}
	for reply, want := range map[string]string{
		`{"task": "x", "depends_on_chat_history": false}`:                                                  `no "capabilities" list`,
		`{"task": "x", "depends_on_chat_history": false, "Capabilities": []}`:                              `unknown key(s) "Capabilities"`,
		`{"task": "", "depends_on_chat_history": false, "capabilities": []}`:                               `"task" is missing or empty`,
		`{"task": "x", "depends_on_chat_history": false, "capabilities": "channel_read"}`:                  `"capabilities" must be`,
		`{"task": "x", "depends_on_chat_history": false, "capabilities": ["channel_read"`:                  `JSON`,
		`Sure! I would use channel_read for this.`:                                                         `JSON`,
		`{"task": "x", "depends_on_chat_history": false, "intent": {"kind": "maybe"}, "capabilities": []}`: `"intent.kind" must be`,
	} {
		if _, _, err := parseTaskSelection(reply); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", reply, err, want)
		}
	}
}
