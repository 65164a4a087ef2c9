package server

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed web
var webFiles embed.FS

// webHandler serves the built-in page (web/index.html and its assets).
func webHandler() http.Handler {
	sub, _ := fs.Sub(webFiles, "web") // "web" is embedded above; Sub cannot fail
	return http.FileServerFS(sub)
}

// info is what the web page needs to start: the model ids, the demo
// questions it offers on an empty chat, who the key is, and the safety
// settings a turn of this caller runs with (its indicator of whether
// writes are enabled).
type info struct {
	Models   []string `json:"models"`
	Examples []string `json:"examples"`
	// Principal names the caller as approvals record it.
	Principal string `json:"principal"`
	// WritesEnabled and ApprovalMode are the options a turn of this caller
	// runs with when it asks for none (the configuration's); absent when
	// the runner does not say.
	WritesEnabled *bool  `json:"writes_enabled,omitempty"`
	ApprovalMode  string `json:"approval_mode,omitempty"`
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	in := info{Models: make([]string, 0, len(s.cfg.Models)), Examples: s.cfg.Examples, Principal: callerName(c)}
	if tc := s.features.turns; tc != nil {
		if opts, err := tc.TurnOptions(s.turnRequest(c, "", "", nil, nil)); err == nil {
			in.WritesEnabled, in.ApprovalMode = &opts.WritesEnabled, opts.Mode()
		}
	}
	for _, m := range s.cfg.Models {
		in.Models = append(in.Models, m.ID)
	}
	if in.Examples == nil {
		in.Examples = []string{}
	}
	writeJSON(w, http.StatusOK, in)
}
