package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

// The page's start-up data needs a key like every other API route, and
// carries the configured demo questions.
func TestInfo(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Examples = []string{"What is the beam current?"} })
	if resp, _ := env.do(t, http.MethodGet, "/api/info", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a key: %d, want 401", resp.StatusCode)
	}
	resp, body := env.do(t, http.MethodGet, "/api/info", keyAlice, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got info
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Examples) != 1 || got.Examples[0] != "What is the beam current?" || len(got.Models) != 1 || got.Models[0] != "capgraph" {
		t.Errorf("info = %+v", got)
	}
}
