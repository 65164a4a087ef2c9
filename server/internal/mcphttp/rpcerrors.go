package mcphttp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// JSON-RPC 2.0 error codes an MCP client knows.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInternalError  = -32603
)

// rpcErrors makes every error /mcp answers a JSON-RPC error object — the
// MCP SDK's plain-text 4xx (a wrong Accept, a malformed message, an
// unknown method, 405) and the server's own (a bad key, a rate limit, in
// the OpenAI error shape) — with the request's id, the HTTP status kept.
// An MCP client reads error.message instead of failing on text/plain.
func rpcErrors(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// What the handler reads of the body is kept, for the id of the
		// request an error answers (null when it was never read: a bad key).
		var seen bytes.Buffer
		if r.Body != nil {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, &seen), r.Body}
		}
		ew := &rpcErrorWriter{ResponseWriter: w}
		next(ew, r)
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(seen.Bytes(), &msg)
		ew.finish(msg.ID)
	}
}

// rpcErrorWriter passes a success through untouched (streams included)
// and holds back an error's body, which finish rewrites.
type rpcErrorWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *rpcErrorWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	if code < 400 {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *rpcErrorWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status >= 400 {
		return w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes a success as it streams (progress notifications);
// the server's own writers below flush through their Unwrap.
func (w *rpcErrorWriter) FlushError() error {
	if w.status >= 400 {
		return nil
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *rpcErrorWriter) Flush() { _ = w.FlushError() }

func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *rpcErrorWriter) finish(id json.RawMessage) {
	if w.status < 400 {
		return
	}
	text := strings.TrimSpace(w.body.String())
	code, data := rpcInvalidRequest, map[string]any{"http_status": w.status}
	var api struct {
		Error *apierror.Body `json:"error"`
	}
	switch {
	case json.Unmarshal(w.body.Bytes(), &api) == nil && api.Error != nil:
		// The server's own error (auth, rate limit, body limits).
		text = api.Error.Message
		data["type"] = api.Error.Type
		if api.Error.Code != nil {
			data["code"] = *api.Error.Code
		}
		if api.Error.Param != nil {
			data["param"] = *api.Error.Param
		}
	case strings.Contains(text, "malformed payload") || strings.Contains(text, "unmarshaling jsonrpc"):
		code = rpcParseError
	case strings.Contains(text, "not handled") || strings.Contains(text, "unsupported"):
		code = rpcMethodNotFound
	case w.status == http.StatusMethodNotAllowed:
		text = r405Message
	}
	if w.status >= 500 {
		code = rpcInternalError
	}
	if text == "" {
		text = http.StatusText(w.status)
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	h := w.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.ResponseWriter.WriteHeader(w.status)
	_ = json.NewEncoder(w.ResponseWriter).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": text, "data": data}})
}

// r405Message: a stateless server has no session stream to GET or DELETE.
const r405Message = "method not allowed: this MCP server is stateless (no session stream); send JSON-RPC messages with POST"
