package nodes

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParsePlan: whatever a model replies, parsing the plan never panics,
// and a plan it accepts holds what the executor relies on — every step names
// a capability, context keys are set and unique — and survives a round trip
// through its JSON form unchanged. The corpus (testdata/fuzz/FuzzParsePlan)
// holds replies as models write them: fenced, with prose and <think>
// blocks, truncated, with keys in other cases.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		`{"steps":[{"context_key":"bc","capability":"channel_read","task_objective":"read","parameters":{"channel":"SR:DCCT"}},{"capability":"respond"}]}`,
		"```json\n{\"steps\": [{\"context_key\": \"a\", \"capability\": \"x\", \"inputs\": [{\"T\": \"b\"}]}]}\n```",
		"<think>the user wants the current</think>Here is the plan:\n{\"steps\":[{\"capability\":\"RESPOND\"}]}",
		`{"steps":[{"context_key":"a","capability":"x"},{"context_key":"a","capability":"y"}]}`,
		`{"steps":[{"Capability":"x","context_key":"a"}]}`,
		`{"steps":[{"context_key":"a","capability":"x","inputs":[{}]}]}`,
		`{"steps":[{"context_key":"a","capability":"x"`,
		`{"steps":null}`, `{}`, ``, `[]`, `{"steps":[1]}`, "\x00{\"steps\":[]}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		steps, err := parsePlan(reply)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		seen := map[string]bool{}
		for i, st := range steps {
			if strings.TrimSpace(st.Capability) == "" || st.ContextKey == "" {
				t.Fatalf("step %d of an accepted plan: %+v", i, st)
			}
			if seen[st.ContextKey] {
				t.Fatalf("accepted duplicate context key %q", st.ContextKey)
			}
			seen[st.ContextKey] = true
		}
		// Round trip: the plan written back as a reply parses to itself.
		type inStep struct {
			ContextKey string              `json:"context_key"`
			Capability string              `json:"capability"`
			Objective  string              `json:"task_objective,omitempty"`
			Success    string              `json:"success_criteria,omitempty"`
			Expected   string              `json:"expected_output,omitempty"`
			Parameters map[string]any      `json:"parameters,omitempty"`
			Inputs     []map[string]string `json:"inputs,omitempty"`
		}
		var out struct {
			Steps []inStep `json:"steps"`
		}
		out.Steps = []inStep{}
		for _, st := range steps {
			s := inStep{ContextKey: st.ContextKey, Capability: st.Capability, Objective: st.TaskObjective, Success: st.SuccessCriteria,
				Expected: st.ExpectedOutput, Parameters: st.Parameters}
			for _, in := range st.Inputs {
				s.Inputs = append(s.Inputs, map[string]string{in.Type: in.Key})
			}
			out.Steps = append(out.Steps, s)
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("marshal %+v: %v", out, err)
		}
		again, err := parsePlan(string(b))
		if err != nil {
			t.Fatalf("an accepted plan written back is refused: %v\n%s", err, b)
		}
		a1, _ := json.Marshal(steps)
		a2, _ := json.Marshal(again)
		if string(a1) != string(a2) {
			t.Fatalf("round trip changed the plan:\n%s\n%s", a1, a2)
		}
	})
}

// FuzzParsePlanValid: the one-pass parser accepts only plans the strict
// parser accepts, with the same steps; and the plans models write take the
// one-pass path (so the benchmark measures it).
func FuzzParsePlanValid(f *testing.F) {
	for _, s := range []string{
		`{"steps":[{"context_key":"bc","capability":"channel_read","task_objective":"read","parameters":{"channel":"SR:DCCT"}},{"capability":"respond"}]}`,
		"{\"steps\": [\n {\"context_key\": \"a\", \"capability\": \" x \", \"inputs\": [{\"T\": \"b\", \"S\": \"c\"}, {\"T\": \"d\", \"T\": \"e\"}]}]}",
		`{"steps":[{"context_key":"a","capability":"x","capability":null}]}`,
		`{"steps":[{"context_key":"a","capability":"x","parameters":{"a":1},"parameters":{"b":2}}]}`,
		`{"steps":[{"context_key":"\u00e9\"","capability":"Clarify","inputs":[{"T":null}]}], "steps": []}`,
		`{"steps":[{"context_key":"a","capability":"x"},{"context_key":"a","capability":"y"}]}`,
		`{"steps":[{"Capability":"x","context_key":"a"}]}`,
		`{"steps":[{"context_key":"a","capability":"x","inputs":[{}]}]}`,
		`{"steps":null}`, `{}`, `{"steps":[1]}`, `{"steps":[null]}`, `{"steps":[{"capability":"respond","inputs":[null]}]}`,
		"{\"steps\":[{\"capability\":\"\xff\",\"context_key\":\"k\"}]}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		raw, err := extractJSON(text, planReply.keys()...)
		if err != nil {
			return
		}
		fast, ok := parsePlanValid(raw)
		strict, err := parsePlanStrict(raw)
		if !ok {
			return
		}
		if err != nil || !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%s:\none pass: %#v\nstrict:   %#v, %v", raw, fast, strict, err)
		}
	})
}

// TestPlanReplyTakesOnePass: a plan as models write it (fenced after
// prose, spaces and newlines, inputs) is read in one pass.
func TestPlanReplyTakesOnePass(t *testing.T) {
	reply := "Here is the plan.\n```json\n" + `{"steps": [
	 {"context_key": "ch", "capability": "find_channel", "task_objective": "find the beam current channel", "expected_output": "CHANNEL"},
	 {"context_key": "hist", "capability": "read_archive", "task_objective": "read the last hour", "expected_output": "HISTORY", "inputs": [{"CHANNEL": "ch"}], "parameters": {"hours": 1}},
	 {"context_key": "answer", "capability": "Respond", "task_objective": "answer with the mean"}]}` + "\n```"
	raw, err := extractJSON(reply, planReply.keys()...)
	if err != nil {
		t.Fatal(err)
	}
	steps, ok := parsePlanValid(raw)
	want, err := parsePlanStrict(raw)
	if !ok || err != nil || !reflect.DeepEqual(steps, want) || len(steps) != 3 || steps[2].Capability != "respond" {
		t.Fatalf("one pass: %+v, %v; strict: %+v, %v", steps, ok, want, err)
	}
}
