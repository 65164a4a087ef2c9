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

// info is what the web page needs to start: the model ids and the demo
// questions it offers on an empty chat.
type info struct {
	Models   []string `json:"models"`
	Examples []string `json:"examples"`
}

func (s *Server) handleInfo(w http.ResponseWriter, r *http.Request) {
	in := info{Models: make([]string, 0, len(s.cfg.Models)), Examples: s.cfg.Examples}
	for _, m := range s.cfg.Models {
		in.Models = append(in.Models, m.ID)
	}
	if in.Examples == nil {
		in.Examples = []string{}
	}
	writeJSON(w, http.StatusOK, in)
}
