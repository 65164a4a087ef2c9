package openai

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/internal/jsonquote"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/google/uuid"
)

// Ident is a chat completion's id and creation time. An answer of a run
// has its run's: the first response, a retry joining the run and a replay
// of its answer are the same completion to the client.
type Ident struct {
	ID      string
	Created int64
}

// RunIdent is the completion identity of run id, started at started.
func RunIdent(id string, started time.Time) Ident {
	return Ident{ID: "chatcmpl-" + strings.TrimPrefix(id, "run-"), Created: started.Unix()}
}

// NewIdent is the identity of an answer no run wrote.
func NewIdent(now time.Time) Ident {
	return Ident{ID: "chatcmpl-" + uuid.NewString(), Created: now.Unix()}
}

// WriteCompletion answers with a whole chat.completion.
func WriteCompletion(w http.ResponseWriter, model string, ci Ident, content, reasoning string, u agent.Usage) {
	stop := "stop"
	jsonreply.JSON(w, http.StatusOK, Completion{
		ID: ci.ID, Object: "chat.completion", Created: ci.Created, Model: model,
		Choices: []Choice{{Message: &OutMessage{Role: "assistant", Content: content, ReasoningContent: reasoning}, FinishReason: &stop}},
		Usage:   &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens},
	})
}

// Chunker writes chat.completion.chunk frames of one stream.
type Chunker struct {
	// SSE is the stream the frames go to.
	SSE      *sse.Writer
	id       string
	created  int64
	model    string
	usage    bool
	statuses bool
	// head is every chunk's start, `{"id":…,"choices":[{"index":0`, and buf
	// the chunk being written: a turn writes a chunk per event it shows.
	head, buf []byte
}

// ChunkerConfig is what a stream's frames say beside the answer: its
// model, whether it ends with a usage chunk (stream_options.include_usage)
// and whether it carries Open WebUI status frames.
type ChunkerConfig struct {
	Model           string
	Usage, Statuses bool
	// Now and WriteTimeout are the stream's clock and a frame's write bound.
	Now          func() time.Time
	WriteTimeout time.Duration
}

// NewChunker starts the stream of completion ci, held (sse.StartHeld):
// its headers and first frames go out at the writer's first Release.
func NewChunker(w http.ResponseWriter, cfg ChunkerConfig, ci Ident) *Chunker {
	return &Chunker{SSE: sse.StartHeld(w, cfg.Now, cfg.WriteTimeout), id: ci.ID, created: ci.Created,
		model: cfg.Model, usage: cfg.Usage, statuses: cfg.Statuses}
}

// chunk writes a chunk of one choice: json.Marshal's bytes for
// Completion{…, Choices: []Choice{{Delta: d, FinishReason: finish}}}
// (TestChunkIsCompletionsJSON), written by hand.
func (k *Chunker) chunk(d *Delta, finish *string) {
	if k.head == nil {
		h := append([]byte(`{"id":`), jsonquote.Append(nil, k.id)...)
		h = append(h, `,"object":"chat.completion.chunk","created":`...)
		h = strconv.AppendInt(h, k.created, 10)
		h = append(append(h, `,"model":`...), jsonquote.Append(nil, k.model)...)
		k.head = append(h, `,"choices":[{"index":0`...)
	}
	b := append(k.buf[:0], k.head...)
	if d != nil {
		b = append(b, `,"delta":{`...)
		sep := ""
		if d.Role != "" {
			b = jsonquote.Append(append(b, `"role":`...), d.Role)
			sep = ","
		}
		if d.Content != nil {
			b = jsonquote.Append(append(append(b, sep...), `"content":`...), *d.Content)
			sep = ","
		}
		if d.ReasoningContent != "" {
			b = jsonquote.Append(append(append(b, sep...), `"reasoning_content":`...), d.ReasoningContent)
		}
		b = append(b, '}')
	}
	b = append(b, `,"finish_reason":`...)
	if finish == nil {
		b = append(b, "null"...)
	} else {
		b = jsonquote.Append(b, *finish)
	}
	b = append(b, `,"logprobs":null}]}`...)
	k.buf = b
	k.SSE.DataJSON(b)
}

// Role opens the assistant's message.
func (k *Chunker) Role() {
	empty := ""
	k.chunk(&Delta{Role: "assistant", Content: &empty}, nil)
}

// Delta sends d.
func (k *Chunker) Delta(d Delta) { k.chunk(&d, nil) }

// Content sends answer text ("" sends nothing).
func (k *Chunker) Content(s string) {
	if s != "" {
		k.chunk(&Delta{Content: &s}, nil)
	}
}

// Status sends a status frame, when the stream carries them.
func (k *Chunker) Status(d StatusData) {
	if k.statuses {
		k.SSE.Data(StatusFrame{Event: StatusEvent{Type: "status", Data: d}})
	}
}

// Heartbeat is an empty-delta chunk: every client treats it as a no-op,
// unlike SSE comment lines, which break go-openai.
func (k *Chunker) Heartbeat() { k.chunk(&Delta{}, nil) }

// Finish ends the stream: the stop chunk, the usage when asked, [DONE].
func (k *Chunker) Finish(u agent.Usage) {
	stop := "stop"
	k.chunk(&Delta{}, &stop)
	if k.usage {
		k.SSE.Data(Completion{ID: k.id, Object: "chat.completion.chunk", Created: k.created, Model: k.model,
			Choices: []Choice{}, Usage: &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}})
	}
	k.SSE.Data("[DONE]")
}

// Fail ends the stream with an OpenAI error frame saying message (no
// [DONE]), the way compatible servers report a failure after the 200.
func (k *Chunker) Fail(message string) {
	code := "run_failed"
	k.SSE.Data(map[string]any{"error": apierror.Body{Message: message, Type: "server_error", Code: &code}})
}
