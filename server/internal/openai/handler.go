package openai

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/transcripts"
)

// Deps is what the Chat Completions routes need of the server.
type Deps struct {
	Chats chatturn.Chats
	// Auth wraps every route in the server's authentication and rate
	// limit.
	Auth   func(http.HandlerFunc) http.HandlerFunc
	Models []chatturn.Model
	// MaxMessages and MaxMessageBytes bound a request's messages.
	MaxMessages, MaxMessageBytes int
	// DisableTaskGuard runs Open WebUI's background tasks on the agent
	// instead of answering them here (tasks.go).
	DisableTaskGuard bool
	// ArtifactBase is the server's address an answer's artifact links
	// start with.
	ArtifactBase func(*http.Request) string
	Now          func() time.Time
	// StreamWriteTimeout bounds a frame's write; Heartbeat is how often
	// an idle stream says it is alive.
	StreamWriteTimeout time.Duration
	Heartbeat          time.Duration
}

// Routes registers GET /v1/models, GET /v1/models/{id} and POST
// /v1/chat/completions behind d.Auth.
func Routes(mux *http.ServeMux, d Deps) {
	mux.HandleFunc("GET /v1/models", d.Auth(d.handleModels))
	mux.HandleFunc("GET /v1/models/{id}", d.Auth(d.handleModel))
	mux.HandleFunc("POST /v1/chat/completions", d.Auth(d.handleChatCompletions))
}

// runIdent is the completion identity of ru's answer.
func runIdent(ru chatturn.Run) Ident {
	id, started := ru.Identity()
	return RunIdent(id, started)
}

const modelsCreated = 1767225600 // 2026-01-01, a fixed "created" for model objects

func (d Deps) handleModels(w http.ResponseWriter, r *http.Request) {
	data := make([]ModelObject, 0, len(d.Models))
	for _, m := range d.Models {
		data = append(data, ModelObject{ID: m.ID, Object: "model", Created: modelsCreated, OwnedBy: "capgraph"})
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (d Deps) handleModel(w http.ResponseWriter, r *http.Request) {
	m, ok := d.model(r.PathValue("id"))
	if !ok {
		d.Chats.WriteError(w, &apierror.RequestError{Kind: apierror.ErrUnknownModel, Param: "model", Message: fmt.Sprintf("the model `%s` does not exist", r.PathValue("id"))})
		return
	}
	jsonreply.JSON(w, http.StatusOK, ModelObject{ID: m.ID, Object: "model", Created: modelsCreated, OwnedBy: "capgraph"})
}

func (d Deps) model(id string) (chatturn.Model, bool) {
	for _, m := range d.Models {
		if m.ID == id {
			return m, true
		}
	}
	return chatturn.Model{}, false
}

// Parse reads r as the chat completions route does: the turn it asks for,
// or a 4xx naming what is wrong.
func (d Deps) Parse(r *http.Request) (chatturn.Turn, error) {
	var req ChatRequest
	if err := reqbody.Decode(r, &req); err != nil {
		return chatturn.Turn{}, err
	}
	if req.Model == "" {
		return chatturn.Turn{}, apierror.BadRequest("model", "required")
	}
	m, ok := d.model(req.Model)
	if !ok {
		return chatturn.Turn{}, &apierror.RequestError{Kind: apierror.ErrUnknownModel, Param: "model", Message: fmt.Sprintf("the model `%s` does not exist", req.Model)}
	}
	if req.N != nil && *req.N > 1 {
		return chatturn.Turn{}, apierror.BadRequest("n", "only n=1 is supported")
	}
	if f := req.ResponseFormat; f != nil && f.Type != "" && f.Type != "text" {
		return chatturn.Turn{}, apierror.BadRequest("response_format", "%q is not supported: capgraph answers in Markdown text, not JSON; leave response_format out or set it to {\"type\": \"text\"}", f.Type)
	}
	if len(req.Messages) == 0 {
		return chatturn.Turn{}, apierror.BadRequest("messages", "at least one message is required")
	}
	if len(req.Messages) > d.MaxMessages {
		return chatturn.Turn{}, apierror.BadRequest("messages", "%d messages exceed the limit of %d", len(req.Messages), d.MaxMessages)
	}
	t := chatturn.Turn{ModelID: m.ID, Options: m.Options, Stream: req.Stream, Usage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, User: req.User}
	for i, msg := range req.Messages {
		txt, err := msg.Text()
		if err != nil {
			return chatturn.Turn{}, apierror.BadRequest(fmt.Sprintf("messages[%d].content", i), "must be a string or an array of content parts")
		}
		if len(txt) > d.MaxMessageBytes {
			return chatturn.Turn{}, apierror.BadRequest(fmt.Sprintf("messages[%d].content", i), "%d bytes exceed the limit of %d", len(txt), d.MaxMessageBytes)
		}
		switch msg.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return chatturn.Turn{}, apierror.BadRequest(fmt.Sprintf("messages[%d].role", i), "unknown role %q", msg.Role)
		}
		if msg.Role == "assistant" {
			t.LastAssistant = txt
		}
		t.Msgs = append(t.Msgs, transcripts.Msg{Role: msg.Role, Text: txt})
		if i == len(req.Messages)-1 {
			if msg.Role == "assistant" {
				// A client's "continue": capgraph's answers are whole, so
				// there is nothing to continue; the UIs show this message.
				return chatturn.Turn{}, apierror.BadRequest(fmt.Sprintf("messages[%d].role", i), "capgraph cannot continue an answer: its answers are complete, and the last message must come from the user. Send a new message instead")
			}
			if msg.Role != "user" {
				return chatturn.Turn{}, apierror.BadRequest(fmt.Sprintf("messages[%d].role", i), "the last message must come from the user")
			}
			t.Input, t.Unread = txt, msg.UnreadParts()
		}
	}
	if strings.TrimSpace(t.Input) == "" {
		if t.Unread > 0 {
			return chatturn.Turn{}, apierror.BadRequest("messages", "the last user message has no text: capgraph reads only the text of a message, not images or files")
		}
		return chatturn.Turn{}, apierror.BadRequest("messages", "the last user message is empty")
	}
	return t, nil
}

func (d Deps) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	t, err := d.Parse(r)
	if err != nil {
		d.Chats.WriteError(w, err)
		return
	}
	if !d.DisableTaskGuard {
		if reply, ok := frontendTask(t.Input); ok {
			d.replyChat(w, t, chatanswer.Reply{Content: reply})
			return
		}
	}
	t.Statuses = d.Chats.StatusFrames(r, t.User)
	// A repeated request (an SDK's retry) gets the first request's run.
	op, ok := d.Chats.Open(w, r, t, chatturn.ChatCompletions)
	if !ok {
		return
	}
	if op.Reply != nil {
		ci := NewIdent(d.Now())
		if op.RunID != "" {
			ci = RunIdent(op.RunID, op.RunStarted)
		}
		d.replyChatUsage(w, t, ci, *op.Reply, op.Usage)
		if op.Delivered != nil && http.NewResponseController(w).Flush() == nil {
			op.Delivered() // the retry got the answer
		}
		return
	}
	if op.Token != "" {
		// A claim that fails (a panic anywhere below) releases its
		// token, so the approval can be answered again instead of
		// staying "being carried out" until a restart.
		defer d.Chats.ReleaseOnPanic(op.Token)
	}
	rd := &chatanswer.Renderer{Base: d.ArtifactBase(r)}
	if t.Stream {
		d.streamChat(w, r, t, op.Run, rd, op.Token)
	} else {
		d.collectChat(w, r, t, op.Run, rd, op.Token)
	}
}

func (d Deps) collectChat(w http.ResponseWriter, r *http.Request, t chatturn.Turn, ru chatturn.Run, rd *chatanswer.Renderer, token string) {
	ru.Join()
	followed := ru.Follow(r.Context(), 0, d.Heartbeat, nil, func(ev agent.Event) { rd.Render(ev) }, nil)
	left, replay, runErr := d.Chats.End(r, ru, followed, token)
	if left {
		return
	}
	if replay != nil {
		writeCompletion(w, t, runIdent(ru), *replay, rd.Usage)
		return
	}
	if runErr != nil && !chatanswer.Answerable(runErr) {
		d.Chats.WriteError(w, fmt.Errorf("the run failed: %w", runErr))
		return
	}
	content := rd.Content.String()
	if runErr != nil {
		// A FATAL failure or the turn's time limit: said as the answer,
		// so that no client retries it into a second run.
		content = chatanswer.Join(content, d.Chats.PublicMessage(runErr))
	}
	content += d.Chats.Finish(r, ru, rd)
	content += chatturn.EndNote(ru)
	if note := t.UnreadNote(); note != "" {
		content = chatanswer.Join(content, note)
	}
	reply := chatanswer.Reply{Content: content, Reasoning: rd.Reasoning.String()}
	if token != "" {
		d.Chats.Settle(token, &reply)
	}
	d.Chats.Remember(r, t, ru, content)
	writeCompletion(w, t, runIdent(ru), reply, rd.Usage)
	if http.NewResponseController(w).Flush() == nil {
		d.Chats.Delivered(ru)
	}
}

// replyChat answers with a stored reply no run wrote, streaming or not.
func (d Deps) replyChat(w http.ResponseWriter, t chatturn.Turn, reply chatanswer.Reply) {
	d.replyChatUsage(w, t, NewIdent(d.Now()), reply, agent.Usage{})
}

// replyChatUsage is replyChat as completion ci, with the usage of the run
// that wrote it.
func (d Deps) replyChatUsage(w http.ResponseWriter, t chatturn.Turn, ci Ident, reply chatanswer.Reply, u agent.Usage) {
	if !t.Stream {
		writeCompletion(w, t, ci, reply, u)
		return
	}
	cs := d.newChunker(w, t, ci)
	cs.Role()
	if reply.Reasoning != "" {
		cs.Delta(Delta{ReasoningContent: reply.Reasoning})
	}
	cs.Content(reply.Content)
	cs.Finish(u)
	cs.SSE.Release()
}

func writeCompletion(w http.ResponseWriter, t chatturn.Turn, ci Ident, reply chatanswer.Reply, u agent.Usage) {
	WriteCompletion(w, t.ModelID, ci, reply.Content, reply.Reasoning, u)
}

func (d Deps) newChunker(w http.ResponseWriter, t chatturn.Turn, ci Ident) *Chunker {
	return NewChunker(w, ChunkerConfig{Model: t.ModelID, Usage: t.Usage, Statuses: t.Statuses,
		Now: d.Now, WriteTimeout: d.StreamWriteTimeout}, ci)
}

func (d Deps) streamChat(w http.ResponseWriter, r *http.Request, t chatturn.Turn, ru chatturn.Run, rd *chatanswer.Renderer, token string) {
	ru.Join()
	// The headers and the role go out with the first events (Follow
	// releases the held writer); the frames after the run's end go out
	// together.
	k := d.newChunker(w, t, runIdent(ru))
	defer k.SSE.Release()
	k.Role()
	ok := ru.Follow(r.Context(), 0, d.Heartbeat, k.SSE, func(ev agent.Event) {
		for _, p := range rd.Render(ev) {
			switch {
			case p.Status != nil:
				k.Status(StatusData{Description: p.Status.Description, Done: p.Status.Done})
			case p.Reasoning != "":
				k.Delta(Delta{ReasoningContent: p.Reasoning})
			case p.Content != "":
				k.Content(p.Content)
			}
		}
	}, func() {
		if k.SSE.Idle(d.Heartbeat) {
			k.Heartbeat()
		}
	})
	k.SSE.Hold()
	left, replay, runErr := d.Chats.End(r, ru, ok, token)
	if left {
		return
	}
	if replay != nil {
		k.Content(replay.Content)
		k.Finish(rd.Usage)
		return
	}
	if runErr != nil && !chatanswer.Answerable(runErr) {
		k.Fail(d.Chats.PublicMessage(runErr))
		return
	}
	tail := d.Chats.Finish(r, ru, rd)
	if runErr != nil {
		tail = chatanswer.Join(tail, d.Chats.PublicMessage(runErr))
		if rd.Content.Len() > 0 {
			tail = "\n\n" + tail
		}
	}
	tail += chatturn.EndNote(ru)
	if note := t.UnreadNote(); note != "" {
		if rd.Content.Len() > 0 || tail != "" {
			tail += "\n\n"
		}
		tail += note
	}
	k.Content(tail)
	rd.Content.WriteString(tail)
	k.Status(StatusData{Description: "", Done: true})
	if token != "" {
		d.Chats.Settle(token, &chatanswer.Reply{Content: rd.Content.String(), Reasoning: rd.Reasoning.String()})
	}
	d.Chats.Remember(r, t, ru, rd.Content.String())
	k.Finish(rd.Usage)
	k.SSE.Release()
	if k.SSE.Err() == nil {
		d.Chats.Delivered(ru)
	}
}
