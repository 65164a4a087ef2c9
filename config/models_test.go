package config_test

import (
	"strings"
	"testing"

	"github.com/capgraph/capgraph/config"
)

// The per-model reply keys parse, merge from default like every model key,
// and a bad json_mode names its line.
func TestModelReplyKeys(t *testing.T) {
	c, err := config.Parse([]byte(`models:
  default:
    provider: openai
    model: qwen3
    base_url: http://gpu:8000/v1
    json_mode: json_object
    stream_usage: false
  response:
    max_tokens: 4096
  classifier:
    json_mode: off
`), "models.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := c.ModelFor("response")
	if resp.JSONMode != "json_object" || resp.StreamUsage == nil || *resp.StreamUsage || resp.MaxTokens != 4096 {
		t.Errorf("response role %+v: json_mode and stream_usage must come from default", resp)
	}
	cls, _ := c.ModelFor("classifier")
	if cls.JSONMode != "off" {
		t.Errorf("classifier json_mode %q, want its own off", cls.JSONMode)
	}
	if len(c.Warnings()) != 0 {
		t.Errorf("a /v1 base_url warned: %v", c.Warnings())
	}

	_, err = config.Parse([]byte("models:\n  default:\n    provider: openai\n    model: x\n    json_mode: strict\n"), "bad.yaml")
	if err == nil || !strings.Contains(err.Error(), "line 5: models.default.json_mode: must be auto, json_schema, json_object, off") {
		t.Errorf("err = %v", err)
	}
	_, err = config.Parse([]byte("models:\n  default:\n    provider: openai\n    model: x\n    stream_usage: maybe\n"), "bad.yaml")
	if err == nil || !strings.Contains(err.Error(), "models.default.stream_usage") {
		t.Errorf("err = %v", err)
	}
}

// A base_url the provider will not find its API under is a warning with
// its line, not an error: some gateways document other paths.
func TestBaseURLWarnings(t *testing.T) {
	tests := []struct {
		name, provider, url string
		warn                string
	}{
		{"openai without /v1", "openai", "http://gpu:8000", "does not end in /v1"},
		{"openai with trailing slash", "openai", "http://gpu:8000/v1/", ""},
		{"openai with path", "openai", "https://api.groq.com/openai/v1", ""},
		{"openai at the full endpoint", "openai", "http://gpu:8000/v1/chat/completions", "does not end in /v1"},
		{"ollama native", "ollama", "http://gpu:11434", ""},
		{"ollama with /v1", "ollama", "http://gpu:11434/v1", "native API"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte("models:\n  default:\n    provider: "+tt.provider+"\n    model: m\n    base_url: "+tt.url+"\n"), "m.yaml")
			if err != nil {
				t.Fatal(err)
			}
			w := c.Warnings()
			if tt.warn == "" {
				if len(w) != 0 {
					t.Errorf("warnings %v", w)
				}
				return
			}
			if len(w) != 1 || w[0].Line != 5 || w[0].Key != "models.default.base_url" || !strings.Contains(w[0].Problem, tt.warn) {
				t.Errorf("warnings %+v, want one on line 5 saying %q", w, tt.warn)
			}
		})
	}
}
