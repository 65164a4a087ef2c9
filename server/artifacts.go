package server

import (
	"cmp"
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/artifactview"
	"github.com/capgraph/capgraph/artifactview/chart"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/mcp"
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

// artifactKey is the key artifact URLs are signed with: Config.
// ArtifactSecret, else one derived from the API keys' digests (stable
// across restarts and replicas with the same keys; anyone who can read
// the digests can sign, so set a secret where that matters).
func artifactKey(cfg Config) []byte {
	h := hmac.New(sha256.New, []byte("capgraph artifact urls"))
	if len(cfg.ArtifactSecret) > 0 {
		h.Write([]byte("secret\x00"))
		h.Write(cfg.ArtifactSecret)
		return h.Sum(nil)
	}
	digests := make([]string, 0, len(cfg.Principals))
	for _, p := range cfg.Principals {
		digests = append(digests, strings.ToLower(p.KeySHA256))
	}
	slices.Sort(digests)
	h.Write([]byte("keys\x00" + strings.Join(digests, "\x00")))
	return h.Sum(nil)
}

func (s *Server) artifactRoutes(mux *http.ServeMux, oa func(http.HandlerFunc) http.HandlerFunc) {
	mux.HandleFunc("GET /api/threads/{thread}/artifacts", oa(s.handleListArtifacts))
	mux.HandleFunc("GET /api/threads/{thread}/artifacts/{artifact}", oa(s.handleGetArtifact))
	// No key needed: the signature is the permission (see above).
	mux.HandleFunc("GET /v1/artifacts/{thread}/{file}", s.handleSignedArtifact)
}

var errNoArtifact = &RequestError{Kind: ErrNotFound, Param: "artifact", Message: "no such artifact"}

// turnArtifacts are the artifacts of a turn of the internal thread (0: the
// latest) and the turn's number.
func (s *Server) turnArtifacts(ctx context.Context, thread string, turn int) ([]capabilities.Artifact, int, error) {
	if ar := s.features.artifacts; ar != nil {
		arts, n, err := ar.Artifacts(ctx, thread, turn)
		if errors.Is(err, agent.ErrUnknownTurn) {
			return nil, 0, &RequestError{Kind: ErrNotFound, Param: "turn", Message: err.Error()}
		}
		return arts, n, err
	}
	st, _, err := s.cfg.Runner.State(ctx, thread)
	if err != nil {
		return nil, 0, err
	}
	if turn != 0 && turn != st.Turn.Number {
		return nil, 0, &RequestError{Kind: ErrNotFound, Param: "turn", Message: fmt.Sprintf("turn %d is not the thread's latest", turn)}
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
	turn, ok := artifactTurn(id)
	if !ok {
		return capabilities.Artifact{}, errNoArtifact
	}
	arts, _, err := s.turnArtifacts(ctx, thread, turn)
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, agent.ErrUnknownThread) {
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

// artifactTurn is the turn an artifact id names ("t3.p1.s2.0" → 3).
func artifactTurn(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "t")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	return n, ok && err == nil && n > 0
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
			writeJSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "turn": 0, "artifacts": []capabilities.Artifact{}})
			return
		}
		s.writeError(w, err)
		return
	}
	if arts == nil {
		arts = []capabilities.Artifact{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"thread_id": th.ID, "turn": n, "artifacts": arts})
}

// handleGetArtifact answers an artifact as JSON, or with a suffix its
// picture: ".svg"/".png" for a time series, its own type's for a figure.
func (s *Server) handleGetArtifact(w http.ResponseWriter, r *http.Request) {
	_, th, ok := s.thread(w, r)
	if !ok {
		return
	}
	id, ext := splitImageExt(r.PathValue("artifact"))
	a, err := s.findArtifact(r.Context(), th.internal, id)
	if err != nil {
		s.writeError(w, err)
		return
	}
	if ext == "" {
		writeJSON(w, http.StatusOK, a)
		return
	}
	s.serveArtifactImage(w, a, ext, "private, no-cache")
}

// handleSignedArtifact serves the picture a signed URL names. A request
// that carries a key must be the thread owner's: another principal gets
// 404, as on every thread route.
func (s *Server) handleSignedArtifact(w http.ResponseWriter, r *http.Request) {
	thread := r.PathValue("thread")
	id, ext := splitImageExt(r.PathValue("file"))
	q := r.URL.Query()
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	notFound := &RequestError{Kind: ErrNotFound, Param: "artifact", Message: "no such artifact, or its link expired"}
	if ext == "" || err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(s.artifactSig(thread, id, exp))) || s.cfg.Now().Unix() > exp {
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
		if err != nil || internalThreadID(c, st.Metadata[MetaThread]) != thread {
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

// artifactSig signs thread, artifact and expiry: 22 characters of
// base64url HMAC-SHA256 (128 bits).
func (s *Server) artifactSig(thread, id string, exp int64) string {
	h := hmac.New(sha256.New, s.artifactKey)
	h.Write([]byte(thread + "\x00" + id + "\x00" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))[:22]
}

// signedArtifactURL is the absolute signed URL of an artifact's picture.
func (s *Server) signedArtifactURL(base, thread string, a capabilities.Artifact, ext string) string {
	exp := s.cfg.Now().Add(s.cfg.ArtifactURLTTL).Unix()
	return fmt.Sprintf("%s/v1/artifacts/%s/%s.%s?exp=%d&sig=%s", base, url.PathEscape(thread), url.PathEscape(a.ID), ext, exp, s.artifactSig(thread, a.ID, exp))
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

// imageExts are the picture suffixes, by the media type they serve.
var imageExts = map[string]string{"svg": "image/svg+xml", "png": "image/png", "jpg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}

func splitImageExt(name string) (id, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return name, ""
	}
	if _, ok := imageExts[name[i+1:]]; ok {
		return name[:i], name[i+1:]
	}
	return name, ""
}

// imageExt is the suffix of an artifact's picture for a Markdown image
// ("" when it has none to serve).
func imageExt(a capabilities.Artifact) string {
	switch {
	case a.TimeSeries != nil:
		return string(chart.SVG)
	case a.Figure != nil && len(a.Figure.Data) > 0:
		for ext, mt := range imageExts {
			if mt == a.Figure.MediaType {
				return ext
			}
		}
	}
	return ""
}

func (s *Server) serveArtifactImage(w http.ResponseWriter, a capabilities.Artifact, ext, cache string) {
	var (
		data []byte
		err  error
	)
	mt := imageExts[ext]
	switch {
	case a.TimeSeries != nil && (ext == "svg" || ext == "png"):
		data, err = s.images.draw(a, chart.Format(ext))
	case a.Figure != nil && len(a.Figure.Data) > 0 && a.Figure.MediaType == mt:
		data = a.Figure.Data
	default:
		s.writeError(w, &RequestError{Kind: ErrNotFound, Param: "artifact", Message: fmt.Sprintf("artifact %s has no .%s picture", a.ID, ext)})
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
		ext := imageExt(a)
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
			if data, err := s.images.draw(a, chart.PNG); err == nil {
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

// imageCache keeps drawn pictures by the artifact's content, so repeated
// loads of a chat (every browser showing it) draw once.
type imageCache struct {
	mu    sync.Mutex
	max   int // bytes
	size  int
	order *list.List // of *cachedImage, most recent first
	byKey map[string]*list.Element
}

type cachedImage struct {
	key  string
	data []byte
}

const imageCacheBytes = 32 << 20

func newImageCache(maxBytes int) *imageCache {
	return &imageCache{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *imageCache) draw(a capabilities.Artifact, f chart.Format) ([]byte, error) {
	b, err := json.Marshal(a.TimeSeries)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append([]byte(string(f)+"\x00"+a.Title+"\x00"), b...))
	key := string(sum[:])
	c.mu.Lock()
	if e, ok := c.byKey[key]; ok {
		c.order.MoveToFront(e)
		data := e.Value.(*cachedImage).data
		c.mu.Unlock()
		return data, nil
	}
	c.mu.Unlock()
	data, err := chart.Draw(a, f)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; !ok && len(data) <= c.max/4 {
		c.byKey[key] = c.order.PushFront(&cachedImage{key: key, data: data})
		c.size += len(data)
		for c.size > c.max {
			e := c.order.Back()
			ci := e.Value.(*cachedImage)
			c.order.Remove(e)
			delete(c.byKey, ci.key)
			c.size -= len(ci.data)
		}
	}
	return data, nil
}
