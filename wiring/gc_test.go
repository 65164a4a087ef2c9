package wiring_test

import (
	"runtime/debug"
	"testing"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/wiring"
)

// The file sets the serving process's collector target, the default is
// config.DefaultGCPercent, and a GOGC in the environment wins over both.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	reg := registry(t, "beam")
	app := wiring.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return reg.All(), nil }}
	tests := []struct {
		name, yaml, gogc string
		want             int
		source           string
	}{
		{"default", "fallback: offline\n", "", config.DefaultGCPercent, "default"},
		{"file", "server:\n  gc_percent: 350\n", "", 350, "server.gc_percent"},
		// The runtime read GOGC when the process started (here it is set
		// to 123 by hand): the file must not override it.
		{"environment wins", "server:\n  gc_percent: 350\n", "75", 123, "GOGC"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(123)
			rt, err := wiring.New(parse(t, tc.yaml), app, wiring.Options{Store: "memory", Getenv: func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			got, source := rt.SetGCPercent()
			if now := debug.SetGCPercent(123); got != tc.want || source != tc.source || now != tc.want {
				t.Fatalf("SetGCPercent() = %d from %q, runtime at %d; want %d from %q", got, source, now, tc.want, tc.source)
			}
		})
	}
}
