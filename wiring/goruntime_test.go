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
		{"defaults, no container", "", nil, 0, RuntimeTuning{GCPercent: DefaultGCPercent, Headroom: DefaultGCHeadroom}},
		{"the file's gc_percent, as it says", "server:\n  gc_percent: 150\n", nil, 0, RuntimeTuning{GCPercent: 150}},
		{"a container of 1 GiB", "", nil, gib, RuntimeTuning{GCPercent: DefaultGCPercent, Headroom: DefaultGCHeadroom, MemoryLimit: gib * 9 / 10}},
		{"GOGC in the environment wins over the file", "server:\n  gc_percent: 150\n", map[string]string{"GOGC": "off"}, 0, RuntimeTuning{}},
		{"GOMEMLIMIT in the environment wins over the container", "", map[string]string{"GOMEMLIMIT": "900MiB"}, gib, RuntimeTuning{GCPercent: DefaultGCPercent, Headroom: DefaultGCHeadroom}},
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
	// With a headroom the target follows the live heap at once (this test
	// process's is far below 1 GiB ÷ 3, so the ceiling); last, as the
	// tuner it starts keeps doing so.
	RuntimeTuning{GCPercent: 300, Headroom: 1 << 30}.Apply()
	if got := debug.SetGCPercent(300); got != 300 {
		t.Errorf("GOGC %d after Apply with a headroom, want 300 (the ceiling, for a small live heap)", got)
	}
	// A fixed target applied afterwards stays: the running tuner follows
	// the tuning applied last, which has no headroom.
	RuntimeTuning{GCPercent: 222}.Apply()
	tune()
	if got := debug.SetGCPercent(222); got != 222 {
		t.Errorf("GOGC %d after a fixed Apply and a tuner pass, want 222", got)
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

// The default target lets a small live heap grow five times and a large
// one by the headroom, never below Go's 100: 200 conversations (about
// 60 MB live) collect at 400, 5,000 (about 350 MB) at 100.
func TestGCPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		live     uint64
		ceiling  int
		headroom int64
		want     int
	}{
		{0, 400, DefaultGCHeadroom, 400},
		{4 * mib, 400, DefaultGCHeadroom, 400},
		{60 * mib, 400, DefaultGCHeadroom, 400},
		{128 * mib, 400, DefaultGCHeadroom, 200},
		{200 * mib, 400, DefaultGCHeadroom, 128},
		{350 * mib, 400, DefaultGCHeadroom, 100},
		{4096 * mib, 400, DefaultGCHeadroom, 100},
		{4096 * mib, 50, DefaultGCHeadroom, 50}, // a ceiling below 100 stays the ceiling
		{60 * mib, 400, 0, 400},
	} {
		if got := GCPercentFor(tc.live, tc.ceiling, tc.headroom); got != tc.want {
			t.Errorf("GCPercentFor(%d MiB, %d, %d MiB) = %d, want %d", tc.live/mib, tc.ceiling, tc.headroom/mib, got, tc.want)
		}
	}
}
