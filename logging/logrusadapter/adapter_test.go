package logrusadapter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/logging/logrusadapter"
)

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  logrusadapter.Config
		want string
	}{
		{"level", logrusadapter.Config{Level: "loud"}, "level"},
		{"format", logrusadapter.Config{Format: "xml"}, "format"},
	}
	for _, tt := range tests {
		_, err := logrusadapter.New(tt.cfg)
		if !errors.Is(err, logrusadapter.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig naming %q", tt.name, err, tt.want)
		}
	}
}

func TestLevelsFilter(t *testing.T) {
	var buf bytes.Buffer
	l, err := logrusadapter.New(logrusadapter.Config{Level: "warn", Output: &buf, DisableTimestamp: true})
	if err != nil {
		t.Fatal(err)
	}
	l.Debug("d")
	l.Info("i")
	l.Warn("w", "k", 1)
	l.Error("e")
	got := buf.String()
	if strings.Contains(got, "msg=d") || strings.Contains(got, "msg=i") {
		t.Errorf("debug/info leaked at warn level:\n%s", got)
	}
	if !strings.Contains(got, "level=warning msg=w k=1") || !strings.Contains(got, "level=error msg=e") {
		t.Errorf("missing warn/error lines:\n%s", got)
	}
}

func TestJSONWithFields(t *testing.T) {
	var buf bytes.Buffer
	l, err := logrusadapter.New(logrusadapter.Config{Level: "debug", Format: logrusadapter.FormatJSON, Output: &buf})
	if err != nil {
		t.Fatal(err)
	}
	l.With("thread", "t1").With("turn", 2).Debug("hello", "cap", "channel_read", "odd")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf.String())
	}
	want := map[string]any{"msg": "hello", "level": "debug", "thread": "t1", "turn": 2.0, "cap": "channel_read", "odd": "(MISSING)"}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("field %s = %v, want %v", k, m[k], v)
		}
	}
	if _, ok := m["time"]; !ok {
		t.Error("timestamp missing")
	}
}

func ExampleNew() {
	l, err := logrusadapter.New(logrusadapter.Config{Level: "info", Output: os.Stdout, DisableTimestamp: true})
	if err != nil {
		panic(err)
	}
	l.With("capability", "channel_read").Info("step done", "attempt", 1)
	l.Debug("not shown")
	// Output: level=info msg="step done" attempt=1 capability=channel_read
}
