package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestDetectOpenWebUI(t *testing.T) {
	cases := []struct {
		name string
		hdr  map[string]string
		user string
		want bool
	}{
		{"Open WebUI forwarding user headers", map[string]string{"X-OpenWebUI-User-Id": "u-1", "User-Agent": "Python/3.11 aiohttp/3.12.15"}, "", true},
		{"only the chat id, in lower case", map[string]string{"x-openwebui-chat-id": "c-1"}, "", true},
		{"Open WebUI without forwarding (aiohttp)", map[string]string{"User-Agent": "Python/3.11 aiohttp/3.12.15"}, "", true},
		{"a pipeline model's user object", nil, `{"name":"Ada","id":"u-1","email":"a@x","role":"user"}`, true},
		{"openai-go", map[string]string{"User-Agent": "OpenAI/Go 3.96.0"}, "", false},
		{"npm openai", map[string]string{"User-Agent": "OpenAI/JS 6.49.0"}, `"someone"`, false},
		{"AI SDK", map[string]string{"User-Agent": "ai-sdk/openai-compatible/2.0.92 ai-sdk/provider-utils/4.0.65 runtime/node.js/20"}, "", false},
		{"Python SDK", map[string]string{"User-Agent": "OpenAI/Python 2.3.0"}, "", false},
		{"LibreChat user id", map[string]string{"User-Agent": "node"}, `"6650f0c0c0ffee"`, false},
		{"Go default client", map[string]string{"User-Agent": "Go-http-client/1.1"}, "", false},
		{"nothing", nil, "", false},
		{"a user string that looks like JSON", nil, `"{not an object}"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.hdr {
				h[k] = []string{v} // as sent, without canonicalising
			}
			if got := detectOpenWebUI(h, json.RawMessage(tc.user)); got != tc.want {
				t.Fatalf("detectOpenWebUI = %v, want %v", got, tc.want)
			}
		})
	}
}

// countStatusFrames streams a question and counts the {"event":…} frames.
func countStatusFrames(t *testing.T, env *testEnv, key string, hdr ...string) int {
	t.Helper()
	resp, body := env.do(t, "POST", "/v1/chat/completions", key, chatBody("capgraph", true, user("What is the beam current?")), hdr...)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	return strings.Count(string(body), `data: {"event":`)
}

func TestStatusFramesSetting(t *testing.T) {
	owui := []string{"X-OpenWebUI-User-Id", "u-1"}
	aiohttp := []string{"User-Agent", "Python/3.12 aiohttp/3.12.15"}
	sdk := []string{"User-Agent", "ai-sdk/openai-compatible/2.0.92"}
	cases := []struct {
		name   string
		server StatusFrames
		alice  StatusFrames // alice's key setting
		hdr    []string
		want   bool
	}{
		{"auto, an SDK", "", "", sdk, false},
		{"auto, Open WebUI headers", "", "", owui, true},
		{"auto, Open WebUI's aiohttp", StatusFramesAuto, "", aiohttp, true},
		{"server on", StatusFramesOn, "", sdk, true},
		{"server off beats detection", StatusFramesOff, "", owui, false},
		{"key off beats server on", StatusFramesOn, StatusFramesOff, owui, false},
		{"key on beats server off", StatusFramesOff, StatusFramesOn, sdk, true},
		{"key auto beats server on", StatusFramesOn, StatusFramesAuto, sdk, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, func(c *Config) {
				c.StatusFrames = tc.server
				c.Principals[0].StatusFrames = tc.alice
			})
			if n := countStatusFrames(t, env, keyAlice, tc.hdr...); (n > 0) != tc.want {
				t.Fatalf("%d status frames, want them: %v", n, tc.want)
			}
		})
	}
	if _, err := New(Config{Runner: newScriptedRunner(), StatusFrames: "sometimes"}); err == nil || !strings.Contains(err.Error(), "StatusFrames") {
		t.Fatalf("bad setting: %v", err)
	}
	if _, err := New(Config{Runner: newScriptedRunner(), Auth: Auth{Principals: []Principal{{Name: "a", KeySHA256: HashKey(keyAlice), StatusFrames: "yes"}}}}); err == nil ||
		!strings.Contains(err.Error(), "Principals[0].StatusFrames") {
		t.Fatalf("bad key setting: %v", err)
	}
}
