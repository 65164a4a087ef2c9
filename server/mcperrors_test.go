package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/state"
)

// The JSON-RPC 2.0 error codes an MCP client knows.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
)

// Every error /mcp answers is a JSON-RPC error object with the request's
// id (when the request was read), a code an MCP client knows and a
// message naming what is wrong; the HTTP status is kept.
func TestMCPErrorsAreJSONRPC(t *testing.T) {
	env := newMCPEnv(t, state.Options{})
	accept := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}
	for _, tc := range []struct {
		name, method, key, body string
		hdr                     []string
		status, code            int
		id, message             string
	}{
		{"no Accept", "POST", keyAlice, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"Content-Type", "application/json"}, 400, rpcInvalidRequest, "null", "Accept must contain"},
		{"malformed", "POST", keyAlice, `{"jsonrpc":"2.0","id":2,`, accept, 400, rpcParseError, "null", "malformed payload"},
		{"unknown method", "POST", keyAlice, `{"jsonrpc":"2.0","id":"q-3","method":"tools/nope"}`, accept, 400, rpcMethodNotFound, `"q-3"`, "tools/nope"},
		{"GET", "GET", keyAlice, "", []string{"Accept", "text/event-stream"}, 405, rpcInvalidRequest, "null", "stateless"},
		{"DELETE", "DELETE", keyAlice, "", nil, 405, rpcInvalidRequest, "null", "stateless"},
		{"bad key", "POST", "sk-wrong", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, accept, 401, rpcInvalidRequest, "null", "invalid API key"},
	} {
		resp, body := env.do(t, tc.method, "/mcp", tc.key, tc.body, tc.hdr...)
		if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %q %s", tc.name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			continue
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *struct {
				Code    int            `json:"code"`
				Message string         `json:"message"`
				Data    map[string]any `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil {
			t.Errorf("%s: not a JSON-RPC error: %v %s", tc.name, err, body)
			continue
		}
		if m.Error.Code != tc.code || string(m.ID) != tc.id || !strings.Contains(m.Error.Message, tc.message) || m.Error.Data["http_status"] != float64(tc.status) {
			t.Errorf("%s: %s", tc.name, body)
		}
	}
	// A success is untouched: the tool list streams as the SDK sends it.
	resp, body := env.do(t, "POST", "/mcp", keyAlice, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, accept...)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ask"`) {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
}
