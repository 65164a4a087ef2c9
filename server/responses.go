package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/chatanswer"
	"github.com/capgraph/capgraph/server/internal/chatturn"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/responses"
	"github.com/capgraph/capgraph/server/internal/sse"
	"github.com/capgraph/capgraph/server/internal/transcripts"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/capgraph/capgraph/state"
)

// The OpenAI Responses API (POST /v1/responses, GET /v1/responses/{id}) on
// the same threads and runs as Chat Completions (startChat): a response is
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

func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	obj, ok := s.responses.Get(ownerKey(callerFrom(r.Context())), r.PathValue("id"))
	if !ok {
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "id",
			Message: "no such response (responses are kept in this server's memory, the newest " + fmt.Sprint(responses.KeepResponses) + ")"})
		return
	}
	jsonreply.JSON(w, http.StatusOK, obj)
}

func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	req, t, err := s.responsesTurn(r, c)
	if err != nil {
		s.writeError(w, err)
		return
	}
	st, ok := s.startResponse(w, r, c, t)
	if !ok {
		return // answered
	}
	if st.token != "" {
		defer s.approvals.ReleaseOnPanic(st.token)
	}
	out := s.newResponseWriter(c, req, t.ModelID, st.clientThread)
	if t.Stream {
		out.sse = sse.Start(w, s.cfg.Now, s.cfg.StreamWriteTimeout)
		out.event("response.created", map[string]any{"response": out.obj})
		out.event("response.in_progress", map[string]any{"response": out.obj})
	}
	if st.reply != nil {
		// An approval answered before (a retry): its answer again.
		out.text(st.reply.Content)
		out.complete(w, st.usage)
		if st.replayed != nil && out.delivered(w) {
			s.releaseKey(st.replayed.ID, st.replayed.Status) // the retry got the answer
		}
		return
	}
	s.followResponse(w, r, c, t, st, out)
}

// responsesTurn reads a Responses request as the chat turn it asks for:
// its conversation (items referenced by id are the thread's own), its
// model profile, and the thread it continues.
func (s *Server) responsesTurn(r *http.Request, c caller) (responses.Request, chatturn.Turn, error) {
	body, err := reqbody.Read(r) // never the connection's details (addresses, timeouts)
	if err != nil {
		return responses.Request{}, chatturn.Turn{}, err
	}
	req, err := responses.Decode(body, responses.Limits{MaxItems: s.cfg.MaxMessages, MaxItemBytes: s.cfg.MaxMessageBytes})
	if err != nil {
		return req, chatturn.Turn{}, err
	}
	m, ok := s.model(req.Model)
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
	err = s.responsesThread(r.Context(), c, req, &t)
	return req, t, err
}

// startResponse opens the request's run. A repeated request (an SDK's
// retry) is answered by the first request's run: joined while it goes
// on, else from its record. false when the request has been answered.
func (s *Server) startResponse(w http.ResponseWriter, r *http.Request, c caller, t chatturn.Turn) (chatStart, bool) {
	var st chatStart
	o := s.chatOpening(w, r, c, t, "responses", "responses", &st)
	op, ok := s.open(o)
	if !ok {
		return st, false
	}
	st.ru = op.ru
	if op.dup == nil {
		return st, true
	}
	var again bool
	if st, again = s.replayResponse(w, r, op.dup, op.explicit); again {
		o.lookFirst = false // too old to count (its key released): a new run
		if op, ok = s.open(o); !ok {
			return st, false
		}
		st.ru = op.ru
		if op.dup != nil {
			st, _ = s.replayResponse(w, r, op.dup, op.explicit)
		}
	}
	return st, st.ru != nil || st.reply != nil
}

// newResponseWriter starts the response object of a request on
// clientThread, kept for GET /v1/responses/{id}.
func (s *Server) newResponseWriter(c caller, req responses.Request, modelID string, clientThread string) *responseWriter {
	obj := responses.Object{ID: newItemID(responseIDPrefix, clientThread), Object: "response", CreatedAt: s.cfg.Now().Unix(),
		Status: "in_progress", Instructions: req.Instructions, Model: modelID, Output: []responses.OutputItem{}, Store: true,
		Temperature: 1, TopP: 1, ToolChoice: "auto", Tools: []struct{}{}, Truncation: "disabled", Metadata: req.Metadata}
	obj.Text.Format.Type = "text"
	if obj.Metadata == nil {
		obj.Metadata = map[string]string{}
	}
	if req.PreviousResponseID != "" {
		obj.PreviousResponseID = &req.PreviousResponseID
	}
	out := &responseWriter{s: s, obj: obj, msgID: newItemID(messageIDPrefix, clientThread), owner: ownerKey(c),
		thread: internalThreadID(c, clientThread)}
	s.responses.Put(out.owner, out.thread, out.obj)
	return out
}

// followResponse writes the run's answer into the response as it comes,
// and completes it as the run ends.
func (s *Server) followResponse(w http.ResponseWriter, r *http.Request, c caller, t chatturn.Turn, st chatStart, out *responseWriter) {
	st.ru.Join()
	rd := &chatanswer.Renderer{Base: s.artifacts.BaseURL(r)}
	followed := s.follow(r.Context(), st.ru, 0, out.sse, func(ev agent.Event) {
		for _, p := range rd.Render(ev) {
			out.text(p.Content)
		}
	}, func() {
		if out.sse != nil && out.sse.Idle(s.cfg.Heartbeat) {
			out.sse.Comment("keep-alive")
		}
	})
	left, replay, runErr := s.chatRunEnd(r, c, st.ru, followed, st.token)
	switch {
	case left:
		// The client went away; its run is canceled (chatRunEnd).
		out.obj.Status = "cancelled"
		s.responses.Put(out.owner, out.thread, out.obj)
		return
	case replay != nil:
		out.text(replay.Content)
	case runErr != nil && !chatanswer.Answerable(runErr):
		out.fail(w, fmt.Errorf("the run failed: %w", runErr))
		return
	case runErr != nil:
		// A FATAL failure or the turn's time limit: said as the answer.
		out.text(chatanswer.Join("", s.publicMessage(runErr)))
	default:
		tail := s.finishApproval(c, st.ru, rd)
		tail += st.ru.endNote()
		if note := t.UnreadNote(); note != "" {
			tail += "\n\n" + note
		}
		out.text(tail)
		rd.Content.WriteString(tail)
		if st.token != "" {
			s.approvals.Settle(st.token, &chatanswer.Reply{Content: rd.Content.String(), Reasoning: rd.Reasoning.String()})
		}
		s.rememberTranscript(c, t, st.ru, rd.Content.String())
	}
	out.complete(w, rd.Usage)
	if out.delivered(w) {
		s.delivered(st.ru)
	}
}

// delivered reports whether the answer reached the connection.
func (o *responseWriter) delivered(w http.ResponseWriter) bool {
	if o.sse != nil {
		return o.sse.Err() == nil
	}
	return http.NewResponseController(w).Flush() == nil
}

// responsesThread names the thread a Responses request continues, when its
// previous_response_id or an item it references names one, and the
// approval that thread waits for (the input answers it, as a Chat
// Completions reply to an approval does). Without either, startChat finds
// the conversation as Chat Completions does (approval token, transcript).
func (s *Server) responsesThread(ctx context.Context, c caller, req responses.Request, t *chatturn.Turn) error {
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
	th, found, err := s.findThread(ctx, c, clientThread)
	if err != nil {
		return err
	}
	if !found {
		return notFound
	}
	if req.PreviousResponseID != "" {
		if latest, known := s.responses.LatestOf(th.internal); known && latest != req.PreviousResponseID {
			return &apierror.RequestError{Kind: apierror.ErrConflict, Param: param, Message: fmt.Sprintf(
				"%s is not the latest response of its conversation (%s is): a conversation cannot branch; continue from the latest", ref, latest)}
		}
	}
	t.Thread = clientThread
	tok, err := s.pendingToken(ctx, c, th.internal)
	if err != nil {
		return err
	}
	t.Token = tok
	return nil
}

// pendingToken is the approval token of the newest approval the thread
// waits for, or "".
func (s *Server) pendingToken(ctx context.Context, c caller, thread string) (string, error) {
	pending, err := s.pendingApprovals(ctx, thread)
	if err != nil || len(pending) == 0 {
		return "", err
	}
	newest := slices.MaxFunc(pending, func(a, b state.Approval) int { return a.Created.Compare(b.Created) })
	return approvalToken(ownerKey(c), thread, newest), nil
}

// responseWriter builds one response: as SSE events when streaming, else
// one JSON object at the end. The output message opens at its first text.
type responseWriter struct {
	s      *Server
	sse    *sse.Writer
	seq    int
	obj    responses.Object
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

func (o *responseWriter) item(status string) responses.OutputItem {
	it := responses.OutputItem{ID: o.msgID, Type: "message", Status: status, Role: "assistant", Content: []responses.OutputPart{}}
	if status == "completed" {
		it.Content = []responses.OutputPart{responses.TextPart(o.buf.String())}
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
		o.event("response.content_part.added", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "part": responses.TextPart("")})
	}
	o.buf.WriteString(s)
	o.event("response.output_text.delta", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "delta": s, "logprobs": []struct{}{}})
}

// complete ends a response that has its answer.
func (o *responseWriter) complete(w http.ResponseWriter, u agent.Usage) {
	if o.open {
		full := o.buf.String()
		o.event("response.output_text.done", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "text": full, "logprobs": []struct{}{}})
		o.event("response.content_part.done", map[string]any{"item_id": o.msgID, "output_index": 0, "content_index": 0, "part": responses.TextPart(full)})
		o.event("response.output_item.done", map[string]any{"output_index": 0, "item": o.item("completed")})
		o.obj.Output = []responses.OutputItem{o.item("completed")}
	}
	now := o.s.cfg.Now().Unix()
	o.obj.Status, o.obj.CompletedAt, o.obj.Usage = "completed", &now, responses.UsageOf(u)
	o.s.responses.Put(o.owner, o.thread, o.obj)
	if o.sse != nil {
		o.event("response.completed", map[string]any{"response": o.obj})
		return
	}
	jsonreply.JSON(w, http.StatusOK, o.obj)
}

// fail ends a response whose run failed (a fault, not an error report:
// the agent's error reports are completed responses).
func (o *responseWriter) fail(w http.ResponseWriter, err error) {
	o.obj.Status, o.obj.Error = "failed", &responses.ObjectError{Code: "server_error", Message: o.s.publicMessage(err)}
	if o.open {
		o.obj.Output = []responses.OutputItem{o.item("completed")}
		o.obj.Output[0].Status = "incomplete"
	}
	o.s.responses.Put(o.owner, o.thread, o.obj)
	if o.sse != nil {
		o.event("response.failed", map[string]any{"response": o.obj})
		return
	}
	o.s.writeError(w, err)
}
