package wiring

import (
	"runtime/debug"
	"testing"

	"github.com/capgraph/capgraph/config"
)

// A serving process's collector: the environment's GOGC and GOMEMLIMIT
// win; otherwise server.gc_percent or the default 400, and 90 % of a
// container's memory as the soft limit (none outside a container).
func TestRuntimeTuning(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name      string
		file      string
		env       map[string]string
		container int64
		want      RuntimeTuning
	}{
		{"defaults, no container", "", nil, 0, RuntimeTuning{GCPercent: DefaultGCPercent}},
		{"the file's gc_percent", "server:\n  gc_percent: 150\n", nil, 0, RuntimeTuning{GCPercent: 150}},
		{"a container of 1 GiB", "", nil, gib, RuntimeTuning{GCPercent: DefaultGCPercent, MemoryLimit: gib * 9 / 10}},
		{"GOGC in the environment wins over the file", "server:\n  gc_percent: 150\n", map[string]string{"GOGC": "off"}, 0, RuntimeTuning{}},
		{"GOMEMLIMIT in the environment wins over the container", "", map[string]string{"GOMEMLIMIT": "900MiB"}, gib, RuntimeTuning{GCPercent: DefaultGCPercent}},
	} {
		cfg, err := config.Parse([]byte(tc.file), "test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if got := RuntimeTuningOf(cfg, func(k string) string { return tc.env[k] }, tc.container); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestApplyRuntimeTuning(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	limit := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(limit)

	RuntimeTuning{GCPercent: 321, MemoryLimit: 3 << 30}.Apply()
	if got := debug.SetGCPercent(100); got != 321 {
		t.Errorf("GOGC %d after Apply, want 321", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 3<<30 {
		t.Errorf("memory limit %d after Apply, want %d", got, 3<<30)
	}
	// Zero fields leave the process's settings alone.
	debug.SetMemoryLimit(limit)
	RuntimeTuning{}.Apply()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC %d after an empty Apply, want 100 (unchanged)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != limit {
		t.Errorf("memory limit %d after an empty Apply, want %d (unchanged)", got, limit)
	}
}

func TestParseContainerMemory(t *testing.T) {
	for in, want := range map[string]int64{
		"max\n":                 0,
		"1073741824\n":          1 << 30,
		"9223372036854771712\n": 0, // cgroup v1's "unlimited"
		"":                      0,
		"garbage":               0,
		"-5":                    0,
	} {
		if got := parseContainerMemory(in); got != want {
			t.Errorf("parseContainerMemory(%q) = %d, want %d", in, got, want)
		}
	}
}
