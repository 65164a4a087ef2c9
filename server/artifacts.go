package server

import (
	"context"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/native"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/capgraph/capgraph/server/internal/artifacts"
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

// artifactRoutes are the artifact routes over this server's threads and
// agent (package server/internal/artifacts).
func (s *Server) artifactRoutes() *artifacts.Routes {
	h := &artifacts.Routes{
		Key: artifacts.Key(s.cfg.ArtifactSecret, keyDigests(s.cfg.Principals)), Images: artifacts.NewCache(imageCacheBytes),
		Now: s.cfg.Now, URLTTL: s.cfg.ArtifactURLTTL, PublicURL: s.cfg.PublicURL,
		State: func(ctx context.Context, thread string) (state.State, error) {
			st, _, err := s.cfg.Runner.State(ctx, thread)
			return st, err
		},
		Thread: func(w http.ResponseWriter, r *http.Request) (artifacts.Thread, bool) {
			th, ok := native.PathThread(w, r, serverNative{s})
			// th.Status is not filled here: "" is never run as far as the
			// list's empty answer goes (the agent's unknown thread says).
			return artifacts.Thread{ID: th.ID, Internal: th.Internal, NeverRun: th.Status == ""}, ok
		},
		Owns: func(r *http.Request, thread string) (bool, error) {
			c, err := s.authenticate(r)
			if err != nil {
				return false, err
			}
			st, _, err := s.cfg.Runner.State(r.Context(), thread)
			return err == nil && internalThreadID(c, st.Metadata[metaThread]) == thread, nil
		},
		Fail: s.writeError,
	}
	if ar := s.features.artifacts; ar != nil {
		h.Reader = ar
	}
	return h
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
