package server

import (
	"embed"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/capgraph/capgraph/server/internal/jsonreply"
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
	jsonreply.JSON(w, http.StatusOK, in)
}

// DefaultPageName is the page's name when Page.Name is empty.
const DefaultPageName = "capgraph"

// Page is what the built-in page shows of the application: its name and
// logo instead of capgraph's, and the zone every time on the page is in
// (24-hour ISO 8601, the zone shown in the header).
type Page struct {
	// Name is the application's name: the page's title and heading
	// (default DefaultPageName).
	Name string
	// Logo is an image shown beside the name and as the tab's icon (SVG,
	// PNG, JPEG, WebP or GIF; LogoType is its media type); none: capgraph's.
	Logo     []byte
	LogoType string
	// TimeZone is the zone the page's times are in (default UTC).
	TimeZone *time.Location
}

// pageInfo is GET /page.json: served without a key, so the page has its
// name and clock before one is entered.
type pageInfo struct {
	Name     string `json:"name"`
	Logo     string `json:"logo"`
	TimeZone string `json:"time_zone"`
}

func (s *Server) pageRoutes(mux *http.ServeMux) {
	p := s.cfg.Page
	info := pageInfo{Name: p.Name, Logo: "favicon.svg", TimeZone: "UTC"}
	if info.Name == "" {
		info.Name = DefaultPageName
	}
	if p.TimeZone != nil {
		info.TimeZone = p.TimeZone.String()
	}
	if len(p.Logo) > 0 {
		info.Logo = "logo"
		mux.Handle("GET /logo", s.pageSecurity(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", p.LogoType)
			w.Header().Set("Content-Length", strconv.Itoa(len(p.Logo)))
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(p.Logo)
		})))
	}
	mux.Handle("GET /page.json", s.pageSecurity(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		jsonreply.JSON(w, http.StatusOK, info)
	})))
}
