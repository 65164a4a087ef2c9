package replytext_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/llm/replytext"
)

// The reply styles of real models, each with what a reader must see.
var visibleCases = []struct {
	name, reply, want string
}{
	{"plain", "The beam current is 500 mA.", "The beam current is 500 mA."},
	{"think block", "<think>\nThe user asks for the current. {\"maybe\": 1}\n</think>\n\nThe beam current is 500 mA.", "The beam current is 500 mA."},
	{"upper-case tags", "<THINK>hmm</THINK>Answer.", "Answer."},
	{"thinking tag", "<thinking>Let me see.</thinking>\nAnswer.", "Answer."},
	{"reasoning tag", "<reasoning>step 1, step 2</reasoning> Answer.", "Answer."},
	{"two blocks", "<think>a</think>First. <think>b</think>Second.", "First. Second."},
	{"unterminated (cut) block", "<think>\nThe user wants the beam current, which", ""},
	{"answer then cut block", "Answer. <think>but wait", "Answer."},
	{"opened in the prompt", "Okay, the user asks about the beam current.\n</think>\n\nThe beam current is 500 mA.", "The beam current is 500 mA."},
	{"empty think block (thinking off)", "<think>\n\n</think>\n\nAnswer.", "Answer."},
	{"a less-than sign is kept", "I < 5 A and <b>bold</b>", "I < 5 A and <b>bold</b>"},
	{"a tag-like word is kept", "use <thinker> here", "use <thinker> here"},
	{"unicode before the tag", "İstanbul <think>x</think>ok", "İstanbul ok"},
}

func TestVisible(t *testing.T) {
	for _, tc := range visibleCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := replytext.Visible(tc.reply); got != tc.want {
				t.Errorf("Visible = %q, want %q", got, tc.want)
			}
		})
	}
}

// Streamed in pieces of every size, the filter shows what Visible shows
// (except a block opened in the prompt, which only the whole reply reveals).
func TestFilterMatchesVisibleWhateverTheChunks(t *testing.T) {
	for _, tc := range visibleCases {
		if replytext.OpenedInPrompt(tc.reply) {
			continue
		}
		for size := 1; size <= len(tc.reply)+1; size++ {
			var f replytext.Filter
			var got strings.Builder
			for i := 0; i < len(tc.reply); i += size {
				chunk := tc.reply[i:min(i+size, len(tc.reply))]
				got.WriteString(f.Write(chunk))
			}
			got.WriteString(f.Flush())
			if strings.TrimSpace(got.String()) != tc.want {
				t.Fatalf("%s, chunks of %d: streamed %q, want %q", tc.name, size, got.String(), tc.want)
			}
		}
	}
}

// Nothing inside a block reaches the stream, even for a moment.
func TestFilterNeverShowsReasoning(t *testing.T) {
	reply := "<think>SECRET reasoning with <b> and </thin and {\"maybe\": 1}</think>The answer."
	for size := 1; size <= len(reply); size++ {
		var f replytext.Filter
		for i := 0; i < len(reply); i += size {
			if out := f.Write(reply[i:min(i+size, len(reply))]); strings.Contains(out, "SECRET") || strings.Contains(out, "maybe") {
				t.Fatalf("chunks of %d: showed %q", size, out)
			}
		}
	}
}

// A model known to open its reasoning in the prompt streams nothing of it.
func TestFilterStartInReasoning(t *testing.T) {
	var f replytext.Filter
	f.StartInReasoning()
	out := f.Write("Okay, the user wants ") + f.Write("the current.</thi") + f.Write("nk>\n\nIt is 500 mA.") + f.Flush()
	if out != "It is 500 mA." {
		t.Errorf("streamed %q", out)
	}
	// A reply without reasoning then shows nothing while streaming; the
	// caller shows Visible of the whole reply instead.
	var g replytext.Filter
	g.StartInReasoning()
	if out := g.Write("It is 500 mA.") + g.Flush(); out != "" {
		t.Errorf("streamed %q", out)
	}
}

func TestObjectChoosesByShape(t *testing.T) {
	keys := []string{"task", "depends_on_chat_history"}
	tests := []struct {
		name, reply string
		want        string // a fragment of the chosen object; "" for an error
		err         string
	}{
		{"clean", `{"task": "read", "depends_on_chat_history": false}`, `"read"`, ""},
		{"fenced", "```json\n{\"task\": \"read\", \"depends_on_chat_history\": false}\n```", `"read"`, ""},
		{"prose-wrapped", `Here is the task: {"task": "read", "depends_on_chat_history": false} Hope it helps!`, `"read"`, ""},
		{"think with braces", "<think>Maybe {\"maybe\": 1}? Or {\"task\": \"draft\"}</think>\n{\"task\": \"read\", \"depends_on_chat_history\": true}", `"read"`, ""},
		{"reasoning in prose without tags", `I considered {"maybe": 1} first. Final: {"task": "read", "depends_on_chat_history": false}`, `"read"`, ""},
		{"draft then final", `{"task": "draft"} then corrected: {"task": "final", "depends_on_chat_history": false}`, `"final"`, ""},
		{"same shape twice: the last", `{"task": "a", "depends_on_chat_history": false} or rather {"task": "b", "depends_on_chat_history": false}`, `"b"`, ""},
		{"wrong keys only: the first, for the strict check", `{"Task": "read"}`, `"Task"`, ""},
		{"cut JSON", `{"task": "read the`, "", "invalid JSON"},
		{"cut outer object, whole inner one", `{"steps": [{"context_key": "a"}, {"cap`, "", "invalid JSON"},
		{"no JSON", "I cannot do that.", "", "no JSON object"},
		{"array", `["read"]`, "", "no JSON object"},
		{"only reasoning (cut)", "<think>The user wants {\"task\"", "", "only reasoning"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := replytext.Object(tc.reply, keys...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Object = %s, %v; want error %q", raw, err, tc.err)
				}
				return
			}
			if err != nil || !strings.Contains(string(raw), tc.want) {
				t.Fatalf("Object = %s, %v; want %s", raw, err, tc.want)
			}
		})
	}
	if _, err := replytext.Object("<think>x", "task"); !errors.Is(err, replytext.ErrOnlyReasoning) {
		t.Errorf("err %v, want ErrOnlyReasoning", err)
	}
}

func TestObjects(t *testing.T) {
	got := replytext.Objects("<think>{\"approved\": false}</think> I would say {\"approved\": true} ```json\n{\"approved\": true}\n```")
	if len(got) != 2 {
		t.Fatalf("objects %q, want the two outside the reasoning", got)
	}
}

func FuzzVisibleAndObject(f *testing.F) {
	for _, tc := range visibleCases {
		f.Add(tc.reply)
	}
	f.Add(`<think>{"a":1}</think>{"task": "x"}`)
	f.Fuzz(func(t *testing.T, reply string) {
		v := replytext.Visible(reply)
		if replytext.Visible(v) != v && !replytext.HasReasoning(v) {
			t.Errorf("Visible is not idempotent on %q", reply)
		}
		_, _ = replytext.Object(reply, "task")
		var fl replytext.Filter
		_ = fl.Write(reply) + fl.Flush()
	})
}
