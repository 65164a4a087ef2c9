package server

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
	"github.com/capgraph/capgraph/server/internal/artifacts"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/state"
)

// Artifacts (docs/frontends.md, "Artifacts"): the native API lists and
// serves them to their thread's owner; a chat answer (Chat Completions,
// Responses) ends with them as Markdown, whose images point to signed,
// expiring URLs under /v1/artifacts that work without the API key — a
// chat client such as Open WebUI renders the Markdown in the user's
// browser, which has no key. The signature binds thread, artifact and
// expiry; the artifact is read from the checkpoint store, so a URL works
// after a restart and on every replica that shares the store and secret.

// DefaultArtifactURLTTL is how long a signed artifact URL works.
const DefaultArtifactURLTTL = 7 * 24 * time.Hour

// minArtifactSecret is the shortest Config.ArtifactSecret accepted.
const minArtifactSecret = 16

// artifactDefaults checks and fills the artifact settings of cfg.
func (cfg *Config) artifactDefaults() error {
	if cfg.ArtifactURLTTL < 0 {
		return &ConfigError{Field: "ArtifactURLTTL", Reason: fmt.Sprintf("%s is negative", cfg.ArtifactURLTTL)}
	}
	if cfg.ArtifactURLTTL == 0 {
		cfg.ArtifactURLTTL = DefaultArtifactURLTTL
	}
	if n := len(cfg.ArtifactSecret); n > 0 && n < minArtifactSecret {
		return &ConfigError{Field: "ArtifactSecret", Reason: fmt.Sprintf("%d bytes; use at least %d random bytes", n, minArtifactSecret)}
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return &ConfigError{Field: "PublicURL", Reason: fmt.Sprintf("%q is not an absolute http(s) address without query (e.g. https://capgraph.example.org)", cfg.PublicURL)}
		}
		cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	}
	return nil
}

func (s *Server) artifactRoutes(mux *http.ServeMux, oa func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("GET /api/threads/{thread}/artifacts", oa(s.handleListArtifacts))
	mux.HandleFunc("GET /api/threads/{thread}/artifacts/{artifact}", oa(s.handleGetArtifact))
	// No key needed: the signature is the permission (see above).
	mux.HandleFunc("GET /v1/artifacts/{thread}/{file}", s.handleSignedArtifact)
}

var errNoArtifact = &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "artifact", Message: "no such artifact"}

// turnArtifacts are the artifacts of a turn of the internal thread (0: the
// latest) and the turn's number.
func (s *Server) turnArtifacts(ctx context.Context, thread string, turn int) ([]capabilities.Artifact, int, error) {
	if ar := s.features.artifacts; ar != nil {
		arts, n, err := ar.Artifacts(ctx, thread, turn)
		if errors.Is(err, agent.ErrUnknownTurn) {
			return nil, 0, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "turn", Message: err.Error()}
		}
		return arts, n, err
	}
	st, _, err := s.cfg.Runner.State(ctx, thread)
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

// findArtifact reads one artifact of the internal thread by id.
func (s *Server) findArtifact(ctx context.Context, thread, id string) (capabilities.Artifact, error) {
	turn, ok := artifacts.Turn(id)
	if !ok {
		return capabilities.Artifact{}, errNoArtifact
	}
	arts, _, err := s.turnArtifacts(ctx, thread, turn)
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

func (s *Server) handleListArtifacts(w http.ResponseWriter, r *http.Request) {
	_, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	turn := 0
	if q := r.URL.Query().Get("turn"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			s.writeError(w, badRequest("turn", "must be a turn number from 1"))
			return
		}
		turn = n
	}
	arts, n, err := s.turnArtifacts(r.Context(), th.internal, turn)
	if err != nil {
		if errors.Is(err, agent.ErrUnknownThread) && th.Status == "" && turn == 0 {
			// Created, never run: no turn yet.
			jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "turn": 0, "artifacts": []capabilities.Artifact{}})
			return
		}
		s.writeError(w, err)
		return
	}
	if arts == nil {
		arts = []capabilities.Artifact{}
	}
	jsonreply.JSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "turn": n, "artifacts": arts})
}

// handleGetArtifact answers an artifact as JSON, or with a suffix its
// picture: ".svg"/".png" for a time series, its own type's for a figure.
func (s *Server) handleGetArtifact(w http.ResponseWriter, r *http.Request) {
	_, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	id, ext := artifacts.SplitImageExt(r.PathValue("artifact"))
	a, err := s.findArtifact(r.Context(), th.internal, id)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if ext == "" {
		jsonreply.JSON(w, http.StatusOK, a)
		return
	}
	s.serveArtifactImage(w, a, ext, "private, no-cache")
}

// handleSignedArtifact serves the picture a signed URL names. A request
// that carries a key must be the thread owner's: another principal gets
// 404, as on every thread route.
func (s *Server) handleSignedArtifact(w http.ResponseWriter, r *http.Request) {
	thread := r.PathValue("thread")
	id, ext := artifacts.SplitImageExt(r.PathValue("file"))
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	notFound := &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "artifact", Message: "no such artifact, or its link expired"}
	if ext == "" || err != nil || !artifacts.Valid(s.artifactKey, thread, id, exp, q.Get("sig")) || s.cfg.Now().Unix() > exp {
		s.writeError(w, notFound)
		return
	}
	if r.Header.Get("Authorization") != "" {
		c, err := s.authenticate(r)
		if err != nil {
			s.writeError(w, err)
			return
		}
		st, _, err := s.cfg.Runner.State(r.Context(), thread)
		if err != nil || internalThreadID(c, st.Metadata[metaThread]) != thread {
			s.writeError(w, notFound)
			return
		}
	}
	a, err := s.findArtifact(r.Context(), thread, id)
	if err != nil {
		s.writeError(w, err)
		return
	}
	age := max(0, min(exp-s.cfg.Now().Unix(), 86400))
	s.serveArtifactImage(w, a, ext, "private, max-age="+strconv.FormatInt(age, 10))
}

// signedArtifactURL is the absolute signed URL of an artifact's picture.
func (s *Server) signedArtifactURL(base, thread string, a capabilities.Artifact, ext string) string {
	exp := s.cfg.Now().Add(s.cfg.ArtifactURLTTL).Unix()
	return fmt.Sprintf("%s/v1/artifacts/%s/%s.%s?exp=%d&sig=%s", base, url.PathEscape(thread), url.PathEscape(a.ID), ext, exp, artifacts.Sign(s.artifactKey, thread, a.ID, exp))
}

// baseURL is where clients reach this server: Config.PublicURL, else the
// request's own scheme and host.
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) serveArtifactImage(w http.ResponseWriter, a capabilities.Artifact, ext, cache string) {
	var (
		data []byte
		err  error
	)
	mt := artifacts.MediaType(ext)
	switch {
	case a.TimeSeries != nil && (ext == "svg" || ext == "png"):
		data, err = s.images.Draw(a, chart.Format(ext))
	case a.Figure != nil && len(a.Figure.Data) > 0 && a.Figure.MediaType == mt:
		data = a.Figure.Data
	default:
		s.writeError(w, &apierror.RequestError{Kind: apierror.ErrNotFound, Param: "artifact", Message: fmt.Sprintf("artifact %s has no .%s picture", a.ID, ext)})
		return
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", mt)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	// An SVG opened by itself is a document: no script, no requests, no
	// forms (inline styles only, which the plots use).
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	// Chat clients show it in their own pages, on another origin.
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// artifactMarkdown is the Markdown a chat answer ends with: the turn's
// artifacts, their pictures at signed URLs of the caller's thread.
func (s *Server) artifactMarkdown(base, thread string, arts []capabilities.Artifact) string {
	if len(arts) == 0 {
		return ""
	}
	return "\n\n" + strings.TrimRight(artifactview.Markdown(arts, func(a capabilities.Artifact) string {
		ext := artifacts.ImageExt(a)
		if ext == "" {
			return ""
		}
		return s.signedArtifactURL(base, thread, a, ext)
	}), "\n")
}

// mcpArtifacts adds the turn's artifacts to an MCP answer: tables, links
// and notes as Markdown after the text (the calling model reads them), the
// pictures as PNG image content (an MCP client has no way to fetch a URL of
// ours with its key).
func (s *Server) mcpArtifacts(text string, arts []capabilities.Artifact) (string, []mcp.Media) {
	if len(arts) == 0 {
		return text, nil
	}
	var imgs []mcp.Media
	for _, a := range arts {
		switch {
		case a.TimeSeries != nil:
			if data, err := s.images.Draw(a, chart.PNG); err == nil {
				imgs = append(imgs, mcp.Media{MediaType: "image/png", Data: data, Bytes: len(data)})
			}
		case a.Figure != nil && len(a.Figure.Data) > 0:
			imgs = append(imgs, mcp.Media{MediaType: a.Figure.MediaType, Data: a.Figure.Data, Bytes: len(a.Figure.Data)})
		}
	}
	return strings.TrimSpace(text + "\n\n" + artifactview.Markdown(arts, nil)), imgs
}

// collectArtifact keeps an artifact event's artifact, replacing one with
// the same id (a step run again after a crash).
func collectArtifact(arts []capabilities.Artifact, ev agent.Event) []capabilities.Artifact {
	if ev.Artifact == nil {
		return arts
	}
	if i := slices.IndexFunc(arts, func(a capabilities.Artifact) bool { return a.ID == ev.Artifact.ID }); i >= 0 {
		arts[i] = *ev.Artifact
		return arts
	}
	return append(arts, *ev.Artifact)
}

// imageCacheBytes bounds the drawn pictures kept (artifacts.Cache).
const imageCacheBytes = 32 << 20

// keyDigests are the principals' key digests, which the artifact signing
// key derives from when Config.ArtifactSecret is empty.
func keyDigests(ps []Principal) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.KeySHA256
	}
	return out
}
