package config

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		in, want, err string
	}{
		{"plain", "plain", ""},
		{"$A and $", "$A and $", ""},
		{"${A}", "1", ""},
		{"x${A}y${A}", "x1y1", ""},
		{"${B:-def}", "def", ""},
		{"${EMPTY:-def}", "def", ""},
		{"${EMPTY}", "", ""},
		{"${A:-def}", "1", ""},
		{"${B:-}", "", ""},
		{"$${A}", "${A}", ""},
		{"${B}", "", "B is not set"},
		{"${A", "", "unterminated"},
		{"${}", "", "invalid environment variable name"},
		{"${A-B}", "", "invalid environment variable name"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expand(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSyntaxProblem(t *testing.T) {
	tests := []struct {
		msg  string
		line int
		text string
	}{
		{"yaml: line 3: mapping values are not allowed in this context", 3, "YAML syntax: mapping values are not allowed in this context"},
		{"yaml: found character that cannot start any token", 0, "YAML syntax: found character that cannot start any token"},
	}
	for _, tt := range tests {
		p := syntaxProblem(errString(tt.msg))
		if p.Line != tt.line || p.Problem != tt.text {
			t.Errorf("syntaxProblem(%q) = %+v", tt.msg, p)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }
