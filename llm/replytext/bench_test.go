package replytext_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/llm/replytext"
)

// A reasoning model's reply: 8 KB of thinking with braces, then a plan.
var longReply = "<think>\n" + strings.Repeat(`Maybe {"maybe": 1} or {"steps": []}? Let me think again. `, 150) + "\n</think>\n\n" +
	`{"steps": [{"context_key": "ch", "capability": "channel_finding", "task_objective": "find"}, {"context_key": "answer", "capability": "respond"}]}`

func BenchmarkObjectAfterLongReasoning(b *testing.B) {
	b.SetBytes(int64(len(longReply)))
	for b.Loop() {
		if _, err := replytext.Object(longReply, "steps"); err != nil {
			b.Fatal(err)
		}
	}
}

// Prose full of braces without reasoning tags: every brace is tried.
func BenchmarkObjectInBraceHeavyProse(b *testing.B) {
	reply := strings.Repeat(`I considered {"maybe": 1} and {x}. `, 300) + `{"steps": []}`
	b.SetBytes(int64(len(reply)))
	for b.Loop() {
		if raw, err := replytext.Object(reply, "steps"); err != nil || string(raw) != `{"steps": []}` {
			b.Fatal(string(raw), err)
		}
	}
}

func BenchmarkFilterStream(b *testing.B) {
	b.SetBytes(int64(len(longReply)))
	for b.Loop() {
		var f replytext.Filter
		for i := 0; i < len(longReply); i += 5 {
			f.Write(longReply[i:min(i+5, len(longReply))])
		}
		f.Flush()
	}
}
