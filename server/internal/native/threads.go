package native

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"github.com/capgraph/capgraph/server/internal/turns"
	"github.com/google/uuid"
)

// createThread makes a thread (POST /api/threads): 201, or 200 with the
// caller's thread of that id when it exists already. The body is optional.
func (h handlers) createThread(w http.ResponseWriter, r *http.Request) {
	var req CreateThreadRequest
	body, err := reqbody.Read(r)
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		err = reqbody.Unmarshal(body, &req, true)
	}
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if req.ID == "" {
		req.ID = uuid.NewString()
	}
	if err := turns.CheckThreadID("id", req.ID); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	th, created, err := h.Threads.CreateThread(r.Context(), req.ID, req.Metadata)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	} else {
		th.Status = h.Threads.Status(r.Context(), th)
	}
	jsonreply.JSON(w, status, th)
}

func (h handlers) listThreads(w http.ResponseWriter, r *http.Request) {
	limit, cursor, err := h.Runs.Page(r)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	ths, next, err := h.Threads.ListThreads(r.Context(), limit, cursor)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if ths == nil {
		ths = []Thread{}
	}
	for i := range ths {
		ths[i].Status = h.Threads.Status(r.Context(), ths[i])
	}
	jsonreply.JSON(w, http.StatusOK, ListPage("threads", ths, next))
}

func (h handlers) getThread(w http.ResponseWriter, r *http.Request) {
	if th, ok := h.thread(w, r); ok {
		th.Status = h.Threads.Status(r.Context(), th)
		jsonreply.JSON(w, http.StatusOK, th)
	}
}

func (h handlers) deleteThread(w http.ResponseWriter, r *http.Request) {
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	if err := h.Threads.DeleteThread(r.Context(), th); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// updateThreadRequest is PATCH /api/threads/{thread}'s body: the keys to
// change, a key set to "" (or null) removed, keys not named kept. One
// request sets at most 16 keys of at most 64 bytes, values of at most 512
// bytes (reqbody.DecodeMetadata); the thread's metadata after it meets the
// limits of POST /api/threads (Threads.SetMetadata). The page renames a
// thread by setting its "title".
type updateThreadRequest struct {
	Metadata json.RawMessage `json:"metadata"`
}

func (h handlers) updateThread(w http.ResponseWriter, r *http.Request) {
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	var req updateThreadRequest
	if err := reqbody.Decode(r, &req); err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	if reqbody.IsNull(req.Metadata) {
		h.Threads.WriteError(w, apierror.BadRequest("metadata", "required: an object of the keys to change"))
		return
	}
	set, err := reqbody.DecodeMetadata(req.Metadata)
	if err != nil {
		h.Threads.WriteError(w, apierror.BadRequest("metadata", "%v", err))
		return
	}
	for k, v := range set {
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			h.Threads.WriteError(w, apierror.BadRequest("metadata", "key %q: keys and values must not contain NUL", k))
			return
		}
	}
	th, err = h.Threads.SetMetadata(r.Context(), th, set)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	th.Status = h.Threads.Status(r.Context(), th)
	jsonreply.JSON(w, http.StatusOK, th)
}

// outcomes lists what became of the thread's changes (GET
// /api/threads/{thread}/outcomes, ?turn=N for one turn), oldest first —
// so a page opened later, or after a restart, shows the badges of every
// turn.
func (h handlers) outcomes(w http.ResponseWriter, r *http.Request) {
	th, ok := h.thread(w, r)
	if !ok {
		return
	}
	turn := 0
	if q := r.URL.Query().Get("turn"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			h.Threads.WriteError(w, apierror.BadRequest("turn", "must be a turn number from 1"))
			return
		}
		turn = n
	}
	all, err := h.Threads.Outcomes(r.Context(), th)
	if err != nil {
		h.Threads.WriteError(w, err)
		return
	}
	out := []*agent.AuditRecord{}
	for _, o := range all {
		if turn == 0 || o.Turn == turn {
			out = append(out, o)
		}
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "outcomes": out})
}
