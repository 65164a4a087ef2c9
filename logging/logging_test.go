package logging_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/capgraph/capgraph/logging"
)

func TestParseLevel(t *testing.T) {
	tests := []struct {
		in      string
		want    logging.Level
		wantErr bool
	}{
		{"debug", logging.LevelDebug, false},
		{"INFO", logging.LevelInfo, false},
		{"", logging.LevelInfo, false},
		{"warning", logging.LevelWarn, false},
		{" warn ", logging.LevelWarn, false},
		{"error", logging.LevelError, false},
		{"verbose", logging.LevelInfo, true},
	}
	for _, tt := range tests {
		got, err := logging.ParseLevel(tt.in)
		if (err != nil) != tt.wantErr {
			t.Fatalf("ParseLevel(%q) err = %v, wantErr %v", tt.in, err, tt.wantErr)
		}
		if err != nil && !errors.Is(err, logging.ErrInvalidLevel) {
			t.Errorf("ParseLevel(%q) err = %v, want ErrInvalidLevel", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("ParseLevel(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[logging.Level]string{logging.LevelDebug: "debug", logging.LevelError: "error", logging.Level(9): "level(9)"} {
		if got := l.String(); got != want {
			t.Errorf("Level(%d).String() = %q, want %q", int(l), got, want)
		}
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		name string
		in   []any
		want map[string]any
	}{
		{"empty", nil, map[string]any{}},
		{"pairs", []any{"a", 1, "b", "x"}, map[string]any{"a": 1, "b": "x"}},
		{"odd", []any{"a", 1, "b"}, map[string]any{"a": 1, "b": logging.Missing}},
		{"non-string key", []any{7, true}, map[string]any{"7": true}},
		{"duplicate", []any{"a", 1, "a", 2}, map[string]any{"a": 2}},
	}
	for _, tt := range tests {
		if got := logging.Fields(tt.in...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Fields = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNop(t *testing.T) {
	l := logging.Nop().With("k", "v")
	l.Debug("d")
	l.Info("i", "a", 1)
	l.Warn("w")
	l.Error("e")
	if l == nil {
		t.Fatal("Nop().With returned nil")
	}
}

func ExampleFields() {
	fmt.Println(logging.Fields("capability", "channel_read", "attempt", 2, "orphan"))
	// Output: map[attempt:2 capability:channel_read orphan:(MISSING)]
}
