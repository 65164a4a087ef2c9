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
