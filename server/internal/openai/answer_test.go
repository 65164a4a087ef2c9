package openai_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/openai"
)

// TestChunkIsCompletionsJSON: the hand-written chunks are byte for byte
// what json.Marshal writes of the wire types, for every kind of delta, with
// text that JSON escapes in the id, the model and the delta.
func TestChunkIsCompletionsJSON(t *testing.T) {
	ci := openai.Ident{ID: `chatcmpl-<1>&"2"`, Created: 1_790_000_000}
	model := "capgraph\u2028ü\xff"
	text := "Strahlstrom <500 mA> & \"ok\"\n\t\u2029 \xe2"
	empty, stop := "", "stop"
	cases := []struct {
		name   string
		send   func(k *openai.Chunker)
		delta  *openai.Delta
		finish *string
	}{
		{"role", (*openai.Chunker).Role, &openai.Delta{Role: "assistant", Content: &empty}, nil},
		{"content", func(k *openai.Chunker) { k.Content(text) }, &openai.Delta{Content: &text}, nil},
		{"reasoning", func(k *openai.Chunker) { k.Delta(openai.Delta{ReasoningContent: text}) }, &openai.Delta{ReasoningContent: text}, nil},
		{"every field", func(k *openai.Chunker) {
			k.Delta(openai.Delta{Role: "assistant", Content: &text, ReasoningContent: text})
		},
			&openai.Delta{Role: "assistant", Content: &text, ReasoningContent: text}, nil},
		{"content and reasoning", func(k *openai.Chunker) { k.Delta(openai.Delta{Content: &empty, ReasoningContent: "r"}) },
			&openai.Delta{Content: &empty, ReasoningContent: "r"}, nil},
		{"heartbeat", (*openai.Chunker).Heartbeat, &openai.Delta{}, nil},
		{"finish", func(k *openai.Chunker) { k.Finish(agent.Usage{}) }, &openai.Delta{}, &stop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			k := openai.NewChunker(rec, openai.ChunkerConfig{Model: model, Now: time.Now}, ci)
			c.send(k)
			c.send(k) // the second chunk reuses the first one's buffer
			k.SSE.Release()
			want, err := json.Marshal(openai.Completion{ID: ci.ID, Object: "chat.completion.chunk", Created: ci.Created, Model: model,
				Choices: []openai.Choice{{Delta: c.delta, FinishReason: c.finish}}})
			if err != nil {
				t.Fatal(err)
			}
			frames := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n\n"), "\n\n")
			if c.name == "finish" {
				if frames[len(frames)-1] != "data: [DONE]" {
					t.Fatalf("the stream ends %q, want data: [DONE]", frames[len(frames)-1])
				}
				frames = []string{frames[0], frames[2]}
			}
			if len(frames) != 2 {
				t.Fatalf("%d frames, want 2: %q", len(frames), rec.Body.String())
			}
			for _, f := range frames {
				if f != "data: "+string(want) {
					t.Fatalf("frame\n%s\nwant\ndata: %s", f, want)
				}
			}
		})
	}
}
