package artifacts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/artifactview"
	"github.com/capgraph/capgraph/artifactview/chart"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/state"
)

// Routes serves a thread's artifacts (docs/frontends.md, "Artifacts"):
// the native API lists and serves them to their thread's owner; a chat
// answer (Chat Completions, Responses) ends with them as Markdown, whose
// images point to signed, expiring URLs under /v1/artifacts that work
// without the API key — a chat client such as Open WebUI renders the
// Markdown in the user's browser, which has no key. The signature binds
// thread, artifact and expiry; the artifact is read from the checkpoint
// store, so a URL works after a restart and on every replica that shares
// the store and secret. What it needs of the server is given as fields.
type Routes struct {
	// Key signs the URLs (Key); Images caches the drawn pictures.
	Key    []byte
	Images *Cache
	// Now is the server's clock; URLTTL how long a signed URL works;
	// PublicURL, when set, is where clients reach the server.
	Now       func() time.Time
	URLTTL    time.Duration
	PublicURL string
	// State reads an internal thread's state (the agent's).
	State func(ctx context.Context, thread string) (state.State, error)
	// Reader, when set, reads the artifacts of any turn of a thread (the
	// agent's optional reader); without it, the latest turn's state.
	Reader Reader
	// Thread finds the caller's thread the request's path names, or
	// answers why not (false).
	Thread func(w http.ResponseWriter, r *http.Request) (Thread, bool)
	// Owns reports whether the API key the request carries owns the
	// internal thread; an error is the key's refusal (written as is).
	Owns func(r *http.Request, thread string) (bool, error)
	// Fail answers an error in the server's error shape.
	Fail func(w http.ResponseWriter, err error)
}

// Reader reads the artifacts of a turn of a thread (0: the latest) and the
// turn's number.
type Reader interface {
	Artifacts(ctx context.Context, thread string, turn int) ([]capabilities.Artifact, int, error)
}

// Thread is a caller's thread as the routes need it.
type Thread struct {
	// ID is the client's id, Internal the agent's.
	ID, Internal string
	// NeverRun: created, no turn yet.
	NeverRun bool
}

// Register mounts the routes on mux; auth wraps the routes that need an
// API key.
func (h *Routes) Register(mux *http.ServeMux, auth func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("GET /api/threads/{thread}/artifacts", auth(h.list))
	mux.HandleFunc("GET /api/threads/{thread}/artifacts/{artifact}", auth(h.get))
	// No key needed: the signature is the permission (see above).
	mux.HandleFunc("GET /v1/artifacts/{thread}/{file}", h.signed)
}

var errNoArtifact = &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "artifact", Message: "no such artifact"}

// TurnArtifacts are the artifacts of a turn of the internal thread (0:
// the latest) and the turn's number.
func (h *Routes) TurnArtifacts(ctx context.Context, thread string, turn int) ([]capabilities.Artifact, int, error) {
	if h.Reader != nil {
		arts, n, err := h.Reader.Artifacts(ctx, thread, turn)
		if errors.Is(err, agent.ErrUnknownTurn) {
			return nil, 0, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "turn", Message: err.Error()}
		}
		return arts, n, err
	}
	st, err := h.State(ctx, thread)
	if err != nil {
		return nil, 0, err
	}
	if turn != 0 && turn != st.Turn.Number {
		return nil, 0, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "turn", Message: fmt.Sprintf("turn %d is not the thread's latest", turn)}
	}
	rs := slices.Clone(st.Turn.Results)
	slices.SortStableFunc(rs, func(x, y state.StepResult) int {
		return cmp.Or(cmp.Compare(x.Plan, y.Plan), cmp.Compare(x.StepIndex, y.StepIndex))
	})
	var out []capabilities.Artifact
	for _, r := range rs {
		out = append(out, r.Artifacts...)
	}
	return out, st.Turn.Number, nil
}

// find reads one artifact of the internal thread by id.
func (h *Routes) find(ctx context.Context, thread, id string) (capabilities.Artifact, error) {
	turn, ok := Turn(id)
	if !ok {
		return capabilities.Artifact{}, errNoArtifact
	}
	arts, _, err := h.TurnArtifacts(ctx, thread, turn)
	if err != nil {
		if errors.Is(err, apierror.ErrNotFound) || errors.Is(err, agent.ErrUnknownThread) {
			return capabilities.Artifact{}, errNoArtifact
		}
		return capabilities.Artifact{}, err
	}
	for _, a := range arts {
		if a.ID == id {
			return a, nil
		}
	}
	return capabilities.Artifact{}, errNoArtifact
}

func (h *Routes) list(w http.ResponseWriter, r *http.Request) {
	th, ok := h.Thread(w, r)
	if !ok {
		return
	}
	turn := 0
	if q := r.URL.Query().Get("turn"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			h.Fail(w, apierror.BadRequest("turn", "must be a turn number from 1"))
			return
		}
		turn = n
	}
	arts, n, err := h.TurnArtifacts(r.Context(), th.Internal, turn)
	if err != nil {
		if errors.Is(err, agent.ErrUnknownThread) && th.NeverRun && turn == 0 {
			// Created, never run: no turn yet.
			jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "turn": 0, "artifacts": []capabilities.Artifact{}})
			return
		}
		h.Fail(w, err)
		return
	}
	if arts == nil {
		arts = []capabilities.Artifact{}
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "turn": n, "artifacts": arts})
}

// get answers an artifact as JSON, or with a suffix its picture:
// ".svg"/".png" for a time series, its own type's for a figure.
func (h *Routes) get(w http.ResponseWriter, r *http.Request) {
	th, ok := h.Thread(w, r)
	if !ok {
		return
	}
	id, ext := SplitImageExt(r.PathValue("artifact"))
	a, err := h.find(r.Context(), th.Internal, id)
	if err != nil {
		h.Fail(w, err)
		return
	}
	if ext == "" {
		jsonreply.JSON(w, http.StatusOK, a)
		return
	}
	h.serveImage(w, a, ext, "private, no-cache")
}

// signed serves the picture a signed URL names. A request that carries a
// key must be the thread owner's: another principal gets 404, as on every
// thread route.
func (h *Routes) signed(w http.ResponseWriter, r *http.Request) {
	thread := r.PathValue("thread")
	id, ext := SplitImageExt(r.PathValue("file"))
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	notFound := &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "artifact", Message: "no such artifact, or its link expired"}
	if ext == "" || err != nil || !Valid(h.Key, thread, id, exp, q.Get("sig")) || h.Now().Unix() > exp {
		h.Fail(w, notFound)
		return
	}
	if r.Header.Get("Authorization") != "" {
		owns, err := h.Owns(r, thread)
		if err != nil {
			h.Fail(w, err)
			return
		}
		if !owns {
			h.Fail(w, notFound)
			return
		}
	}
	a, err := h.find(r.Context(), thread, id)
	if err != nil {
		h.Fail(w, err)
		return
	}
	age := max(0, min(exp-h.Now().Unix(), 86400))
	h.serveImage(w, a, ext, "private, max-age="+strconv.FormatInt(age, 10))
}

// SignedURL is the absolute signed URL of an artifact's picture.
func (h *Routes) SignedURL(base, thread string, a capabilities.Artifact, ext string) string {
	exp := h.Now().Add(h.URLTTL).Unix()
	return fmt.Sprintf("%s/v1/artifacts/%s/%s.%s?exp=%d&sig=%s", base, url.PathEscape(thread), url.PathEscape(a.ID), ext, exp, Sign(h.Key, thread, a.ID, exp))
}

// BaseURL is where clients reach this server: PublicURL, else the
// request's own scheme and host.
func (h *Routes) BaseURL(r *http.Request) string {
	if h.PublicURL != "" {
		return h.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *Routes) serveImage(w http.ResponseWriter, a capabilities.Artifact, ext, cache string) {
	var (
		data []byte
		err  error
	)
	mt := MediaType(ext)
	switch {
	case charted(a) && (ext == "svg" || ext == "png"):
		data, err = h.Images.Draw(a, chart.Format(ext))
	case a.Figure != nil && len(a.Figure.Data) > 0 && a.Figure.MediaType == mt:
		data = a.Figure.Data
	default:
		h.Fail(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "artifact", Message: fmt.Sprintf("artifact %s has no .%s picture", a.ID, ext)})
		return
	}
	if err != nil {
		h.Fail(w, err)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", mt)
	hd.Set("Content-Length", strconv.Itoa(len(data)))
	hd.Set("Cache-Control", cache)
	hd.Set("X-Content-Type-Options", "nosniff")
	// An SVG opened by itself is a document: no script, no requests, no
	// forms (inline styles only, which the plots use).
	hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	// Chat clients show it in their own pages, on another origin.
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// Markdown is the Markdown a chat answer ends with: the turn's artifacts,
// their pictures at signed URLs of the caller's thread.
func (h *Routes) Markdown(base, thread string, arts []capabilities.Artifact) string {
	if len(arts) == 0 {
		return ""
	}
	return "\n\n" + strings.TrimRight(artifactview.Markdown(arts, func(a capabilities.Artifact) string {
		ext := ImageExt(a)
		if ext == "" {
			return ""
		}
		return h.SignedURL(base, thread, a, ext)
	}), "\n")
}

// ForMCP adds the turn's artifacts to an MCP answer: tables, links and
// notes as Markdown after the text (the calling model reads them), the
// pictures as PNG image content (an MCP client has no way to fetch a URL
// of ours with its key).
func (h *Routes) ForMCP(text string, arts []capabilities.Artifact) (string, []mcp.Media) {
	if len(arts) == 0 {
		return text, nil
	}
	var imgs []mcp.Media
	for _, a := range arts {
		switch {
		case charted(a):
			if data, err := h.Images.Draw(a, chart.PNG); err == nil {
				imgs = append(imgs, mcp.Media{MediaType: "image/png", Data: data, Bytes: len(data)})
			}
		case a.Figure != nil && len(a.Figure.Data) > 0:
			imgs = append(imgs, mcp.Media{MediaType: a.Figure.MediaType, Data: a.Figure.Data, Bytes: len(a.Figure.Data)})
		}
	}
	return strings.TrimSpace(text + "\n\n" + artifactview.Markdown(arts, nil)), imgs
}
