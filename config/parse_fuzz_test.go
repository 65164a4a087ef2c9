package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/server/apikey"
)

// FuzzParse: whatever a configuration file holds, parsing it never panics
// (yaml.v3 panics on some inputs; anchors and aliases can explode), every
// refusal is a *Error whose problems each say what is wrong on a line of
// the file, and an accepted file meets the rules the file documents: its
// plain API keys meet apikey.Check, its limits are not negative. The
// corpus (testdata/fuzz/FuzzParse) holds files with every section, type
// errors, unknown keys, anchors, tabs and ${VAR} expansions.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "limits:\n  max_steps: 10\n", "limits: 5\n", "limts:\n  x: 1\n",
		"server:\n  api_keys:\n    - name: a\n      key: short\n",
		"server:\n  api_keys:\n    - name: a\n      key: ${KEY:-0123456789abcdef0}\n",
		"server:\n  limits:\n    max_threads: -2\n    max_page_size: 5\n    duplicate_window: -1s\n",
		"a: &x [*x, *x]\n", "---\na: 1\n---\nb: 2\n", "\tlimits: 1\n", "store: sqlite:\n",
		"models:\n  default: {provider: openai, model: gpt, base_url: \"::\"}\n",
		"retry:\n  capabilities:\n    channel_read: {max_attempts: 5, initial_interval: 1x}\n",
		"server:\n  addr: 127.0.0.1:8080\n  max_body_bytes: 0\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		// YAML breaks lines at CR, LF, CRLF, NEL, LS and PS, and so do the
		// problems' line numbers (a CR-only file has lines too).
		lines := strings.Count(yamlLineBreaks.Replace(data), "\n") + 2
		cfg, err := parse([]byte(data), "fuzz.yaml", func(name string) (string, bool) {
			if name == "KEY" {
				return "0123456789abcdef-fuzz", true
			}
			return "", false
		})
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("refusal %T %v is not a *config.Error with problems", err, err)
			}
			for _, p := range ce.Problems {
				if p.Problem == "" || p.Line < 0 || p.Line > lines {
					t.Fatalf("problem %+v (file of %d lines)", p, lines)
				}
			}
			return
		}
		for i, k := range cfg.Server.APIKeys {
			if k.Key != "" && apikey.Check(k.Key) != nil {
				t.Fatalf("accepted api_keys[%d] with a key that breaks the rule: %v", i, apikey.Check(k.Key))
			}
		}
		l := cfg.Server.Limits
		if l.MaxMetadataKeys < 0 || l.MaxMetadataBytes < 0 || l.MaxPageSize < 0 || l.MaxThreads < -1 || cfg.Server.MaxBodyBytes < 0 || l.MaxConcurrentRuns < 0 || l.RequestsPerMinute < 0 {
			t.Fatalf("accepted limits %+v, max_body_bytes %d", l, cfg.Server.MaxBodyBytes)
		}
	})
}

var yamlLineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")
