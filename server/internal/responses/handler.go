package responses

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/server/internal/transcripts"
	"github.com/capgraph/capgraph/server/internal/turns"
)

// Deps is what the Responses routes need of the server.
type Deps struct {
	Turns turns.Turns
	Chats chatturn.Chats
	// Auth wraps every route in the server's authentication and rate
	// limit.
	Auth   func(http.HandlerFunc) http.HandlerFunc
	Models []chatturn.Model
	// MaxMessages and MaxMessageBytes bound a request's input items.
	MaxMessages, MaxMessageBytes int
	// ArtifactBase is the server's address an answer's artifact links
	// start with.
	ArtifactBase func(*http.Request) string
	Now          func() time.Time
	// StreamWriteTimeout bounds an event's write; Heartbeat is how often
	// an idle stream says it is alive.
	StreamWriteTimeout time.Duration
	Heartbeat          time.Duration
}

// handler serves the routes, keeping the responses for GET in memory.
type handler struct {
	Deps
	store *Store
}

// Routes registers POST /v1/responses and GET /v1/responses/{id} behind
// d.Auth.
func Routes(mux *http.ServeMux, d Deps) {
	h := &handler{Deps: d, store: NewStore()}
	mux.HandleFunc("POST /v1/responses", d.Auth(h.handleResponses))
	mux.HandleFunc("GET /v1/responses/{id}", d.Auth(h.handleGetResponse))
}

func (h *handler) model(id string) (chatturn.Model, bool) {
	for _, m := range h.Models {
		if m.ID == id {
			return m, true
		}
	}
	return chatturn.Model{}, false
}

// The OpenAI Responses API (POST /v1/responses, GET /v1/responses/{id}) on
// the same threads and runs as Chat Completions (chatturn.Chats.Open): a response is
// one run, its text is what Chat Completions would answer (an error
// report included: a completed response, not a failed one; an approval
// request with its token), and previous_response_id continues the
// conversation on the agent's thread.
//
// Ids name their thread: "resp_<hex of the thread's client id>_<random>"
// (and "msg_…" for the output message), so previous_response_id and
// item_reference resolve through the caller's own threads — also after a
// restart and on another replica — and another principal's id names a
// thread the caller does not have: 404. Like an approval token, an id is a
// pointer into the caller's threads, not a secret.

const (
	responseIDPrefix = "resp_"
	messageIDPrefix  = "msg_"
)

// newItemID is an id with prefix naming clientThread.
func newItemID(prefix, clientThread string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString([]byte(clientThread)) + "_" + hex.EncodeToString(b[:])
}

// threadOfItemID is the client thread id an id of ours names.
func threadOfItemID(id string) (string, bool) {
	for _, p := range []string{responseIDPrefix, messageIDPrefix} {
		if rest, ok := strings.CutPrefix(id, p); ok {
			h, _, ok := strings.Cut(rest, "_")
			if !ok {
				return "", false
			}
			b, err := hex.DecodeString(h)
			if err != nil || len(b) == 0 || len(b) > turns.MaxThreadIDLen {
				return "", false
			}
			return string(b), true
		}
	}
	return "", false
}

func (h *handler) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	obj, ok := h.store.Get(h.Chats.Owner(r.Context()), r.PathValue("id"))
	if !ok {
		h.Chats.WriteError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "id",
			Message: "no such response (responses are kept in this server's memory, the newest " + fmt.Sprint(KeepResponses) + ")"})
		return
	}
	jsonreply.JSON(w, http.StatusOK, obj)
}

func (h *handler) handleResponses(w http.ResponseWriter, r *http.Request) {
	req, t, err := h.turn(r)
	if err != nil {
		h.Chats.WriteError(w, err)
		return
	}
	op, ok := h.Chats.Open(w, r, t, chatturn.Responses)
	if !ok {
		return // answered
	}
	if op.Token != "" {
		defer h.Chats.ReleaseOnPanic(op.Token)
	}
	out := h.newResponseWriter(r.Context(), req, t.ModelID, op.ClientThread)
	if t.Stream {
		out.sse = sse.Start(w, h.Now, h.StreamWriteTimeout)
		out.event("response.created", map[string]any{"response": out.obj})
		out.event("response.in_progress", map[string]any{"response": out.obj})
	}
	if op.Reply != nil {
		// An approval answered before (a retry): its answer again.
		out.text(op.Reply.Content)
		out.complete(w, op.Usage)
		if op.Delivered != nil && out.delivered(w) {
			op.Delivered() // the retry got the answer
		}
		return
	}
	h.follow(w, r, t, op, out)
}

// turn reads a Responses request as the chat turn it asks for:
// its conversation (items referenced by id are the thread's own), its
// model profile, and the thread it continues.
func (h *handler) turn(r *http.Request) (Request, chatturn.Turn, error) {
	body, err := reqbody.Read(r) // never the connection's details (addresses, timeouts)
	if err != nil {
		return Request{}, chatturn.Turn{}, err
	}
	req, err := Decode(body, Limits{MaxItems: h.MaxMessages, MaxItemBytes: h.MaxMessageBytes})
	if err != nil {
		return req, chatturn.Turn{}, err
	}
	m, ok := h.model(req.Model)
	if !ok {
		return req, chatturn.Turn{}, &apierror.RequestError{Kind: apierror.ErrUnknownModel, Param: "model", Message: fmt.Sprintf("the model `%s` does not exist", req.Model)}
	}
	t := chatturn.Turn{ModelID: m.ID, Options: m.Options, Stream: req.Stream, ClientMeta: req.Metadata}
	for _, it := range req.Items {
		if it.Ref {
			continue
		}
		if it.Role == "assistant" {
			t.LastAssistant = it.Text
		}
		t.Msgs = append(t.Msgs, transcripts.Msg{Role: it.Role, Text: it.Text})
	}
	last := req.Items[len(req.Items)-1]
	t.Input, t.Unread = last.Text, last.Unread // an empty text was refused by Decode
	err = h.thread(r.Context(), req, &t)
	return req, t, err
}

// newResponseWriter starts the response object of a request on
// clientThread, kept for GET /v1/responses/{id}.
func (h *handler) newResponseWriter(ctx context.Context, req Request, modelID string, clientThread string) *responseWriter {
	obj := Object{ID: newItemID(responseIDPrefix, clientThread), Object: "response", CreatedAt: h.Now().Unix(),
		Status: "in_progress", Instructions: req.Instructions, Model: modelID, Output: []OutputItem{}, Store: true,
		Temperature: 1, TopP: 1, ToolChoice: "auto", Tools: []struct{}{}, Truncation: "disabled", Metadata: req.Metadata}
	obj.Text.Format.Type = "text"
	if obj.Metadata == nil {
		obj.Metadata = map[string]string{}
	}
	if req.PreviousResponseID != "" {
		obj.PreviousResponseID = &req.PreviousResponseID
	}
	out := &responseWriter{h: h, obj: obj, msgID: newItemID(messageIDPrefix, clientThread), owner: h.Chats.Owner(ctx),
		thread: h.Turns.InternalThread(ctx, clientThread)}
	h.store.Put(out.owner, out.thread, out.obj)
	return out
}

// follow writes the run's answer into the response as it comes,
// and completes it as the run ends.
func (h *handler) follow(w http.ResponseWriter, r *http.Request, t chatturn.Turn, op chatturn.Opened, out *responseWriter) {
	op.Run.Join()
	rd := &chatanswer.Renderer{Base: h.ArtifactBase(r)}
	followed := op.Run.Follow(r.Context(), 0, h.Heartbeat, out.sse, func(ev agent.Event) {
		for _, p := range rd.Render(ev) {
			out.text(p.Content)
		}
	}, func() {
		if out.sse != nil && out.sse.Idle(h.Heartbeat) {
			out.sse.Comment("keep-alive")
		}
	})
	left, replay, runErr := h.Chats.End(r, op.Run, followed, op.Token)
	switch {
	case left:
		// The client went away; its run is canceled (chatRunEnd).
		out.obj.Status = "cancelled"
		h.store.Put(out.owner, out.thread, out.obj)
		return
	case replay != nil:
		out.text(replay.Content)
	case runErr != nil && !chatanswer.Answerable(runErr):
		out.fail(w, fmt.Errorf("the run failed: %w", runErr))
		return
	case runErr != nil:
		// A FATAL failure or the turn's time limit: said as the answer.
		out.text(chatanswer.Join("", h.Chats.PublicMessage(runErr)))
	default:
		tail := h.Chats.Finish(r, op.Run, rd)
		tail += chatturn.EndNote(op.Run)
		if note := t.UnreadNote(); note != "" {
			tail += "\n\n" + note
		}
		out.text(tail)
		rd.Content.WriteString(tail)
		if op.Token != "" {
			h.Chats.Settle(op.Token, &chatanswer.Reply{Content: rd.Content.String(), Reasoning: rd.Reasoning.String()})
		}
		h.Chats.Remember(r, t, op.Run, rd.Content.String())
	}
	out.complete(w, rd.Usage)
	if out.delivered(w) {
		h.Chats.Delivered(op.Run)
	}
}

// delivered reports whether the answer reached the connection.
func (o *responseWriter) delivered(w http.ResponseWriter) bool {
	if o.sse != nil {
		return o.sse.Err() == nil
	}
	return http.NewResponseController(w).Flush() == nil
}

// thread names the thread a Responses request continues, when its
// previous_response_id or an item it references names one, and the
// approval that thread waits for (the input answers it, as a Chat
// Completions reply to an approval does). Without either, Chats.Open finds
// the conversation as Chat Completions does (approval token, transcript).
func (h *handler) thread(ctx context.Context, req Request, t *chatturn.Turn) error {
	ref, param := req.PreviousResponseID, "previous_response_id"
	if ref == "" {
		for i, it := range slices.Backward(req.Items) {
			if it.ID != "" {
				if _, ok := threadOfItemID(it.ID); ok || it.Ref {
					ref, param = it.ID, fmt.Sprintf("input[%d].id", i)
					break
				}
			}
		}
	}
	if ref == "" {
		return nil
	}
	notFound := &apierror.RequestError{Kind: apierror.ErrNotFound, Param: param, Message: fmt.Sprintf("no response or item %q", ref)}
	clientThread, ok := threadOfItemID(ref)
	if !ok {
		return notFound
	}
	th, found, err := h.Chats.FindThread(ctx, clientThread)
	if err != nil {
		return err
	}
	if !found {
		return notFound
	}
	if req.PreviousResponseID != "" {
		if latest, known := h.store.LatestOf(th.Internal); known && latest != req.PreviousResponseID {
			return &apierror.RequestError{Kind: apierror.ErrConflict, Param: param, Message: fmt.Sprintf(
				"%s is not the latest response of its conversation (%s is): a conversation cannot branch; continue from the latest", ref, latest)}
		}
	}
	t.Thread = clientThread
	tok, err := h.Chats.PendingToken(ctx, th.Internal)
	if err != nil {
		return err
	}
	t.Token = tok
	return nil
}

// responseWriter builds one response: as SSE events when streaming, else
// one JSON object at the end. The output message opens at its first text.
type responseWriter struct {
	h      *handler
	sse    *sse.Writer
	seq    int
	obj    Object
	msgID  string
	owner  string
	thread string
	open   bool
	buf    strings.Builder
}

// event writes one Responses SSE event: "event: <type>" and the data with
// its type and sequence number.
func (o *responseWriter) event(typ string, fields map[string]any) {
	if o.sse == nil {
		return
	}
	fields["type"] = typ
	fields["sequence_number"] = o.seq
	o.seq++
	o.sse.Frame("", typ, fields)
}

func (o *responseWriter) item(status string) OutputItem {
	it := OutputItem{ID: o.msgID, Type: "message", Status: status, Role: "assistant", Content: []OutputPart{}}
	if status == "completed" {
		it.Content = []OutputPart{TextPart(o.buf.String())}
	}
	return it
}

// text appends answer text.
func (o *responseWriter) text(s string) {
	if s == "" {
		return
	}
	if !o.open {
		o.open = true
		o.event("response.output_item.added", map[string]any{"output_index": 0, "item": o.item("in_progress")})
		o.event("response.content_part.added", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "part": TextPart("")})
	}
	o.buf.WriteString(s)
	o.event("response.output_text.delta", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "delta": s, "logprobs": []struct{}{}})
}

// complete ends a response that has its answer.
func (o *responseWriter) complete(w http.ResponseWriter, u agent.Usage) {
	if o.open {
		full := o.buf.String()
		o.event("response.output_text.done", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "text": full, "logprobs": []struct{}{}})
		o.event("response.content_part.done", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "part": TextPart(full)})
		o.event("response.output_item.done", map[string]any{"output_index": 0, "item": o.item("completed")})
		o.obj.Output = []OutputItem{o.item("completed")}
	}
	now := o.h.Now().Unix()
	o.obj.Status, o.obj.CompletedAt, o.obj.Usage = "completed", &now, UsageOf(u)
	o.h.store.Put(o.owner, o.thread, o.obj)
	if o.sse != nil {
		o.event("response.completed", map[string]any{"response": o.obj})
		return
	}
	jsonreply.JSON(w, http.StatusOK, o.obj)
}

// fail ends a response whose run failed (a fault, not an error report:
// the agent's error reports are completed responses).
func (o *responseWriter) fail(w http.ResponseWriter, err error) {
	o.obj.Status, o.obj.Error = "failed", &ObjectError{Code: "server_error", Message: o.h.Chats.PublicMessage(err)}
	if o.open {
		o.obj.Output = []OutputItem{o.item("completed")}
		o.obj.Output[0].Status = "incomplete"
	}
	o.h.store.Put(o.owner, o.thread, o.obj)
	if o.sse != nil {
		o.event("response.failed", map[string]any{"response": o.obj})
		return
	}
	o.h.Chats.WriteError(w, err)
}
