package wiring

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/config"
)

// DefaultGCPercent is a serving process's collector target (GOGC) when
// neither server.gc_percent nor the environment sets one. Go's own 100
// collects every time the heap doubles; a server holding little live
// memory per conversation and allocating per event spends less CPU and
// waits less with the heap allowed to grow to five times what is live
// (docs/performance.md, "Where the tail goes"), and the memory limit below
// keeps that growth within a container's memory.
const DefaultGCPercent = 400

// DefaultGCHeadroom caps what DefaultGCPercent lets the heap grow by: once
// five times the live heap would be more than this beyond it, the target
// comes down (to Go's 100 at the least), so a process holding thousands of
// conversations grows as Go's default would and not five times its live
// heap. Left to 400 at 5,000 live conversations a process without a
// memory limit peaked at 2.1 GB against 1.2 GB with 100.
const DefaultGCHeadroom = 256 << 20

// memoryLimitShare is the part of a container's memory the collector keeps
// the heap within (debug.SetMemoryLimit), when the environment sets no
// GOMEMLIMIT: the rest is for stacks, the runtime and the store's caches.
const memoryLimitShare = 0.9

// RuntimeTuning is how a serving process sets up Go's collector.
type RuntimeTuning struct {
	// GCPercent is the collector's target (debug.SetGCPercent); 0 leaves
	// the environment's GOGC in force.
	GCPercent int
	// MemoryLimit is the soft limit on the process's memory in bytes
	// (debug.SetMemoryLimit); 0 leaves the environment's GOMEMLIMIT, or
	// none.
	MemoryLimit int64
	// Headroom, when positive, makes GCPercent a ceiling: every second
	// the target is set to what lets the heap grow by Headroom beyond
	// what is live, between 100 and GCPercent (GCPercentFor).
	Headroom int64
}

// GCPercentFor is the collector's target that lets a heap of live bytes
// grow by headroom, within [min(100, ceiling), ceiling].
func GCPercentFor(live uint64, ceiling int, headroom int64) int {
	if live == 0 || headroom <= 0 {
		return ceiling
	}
	p := int(min(uint64(headroom)*100/live, uint64(ceiling)))
	return max(p, min(100, ceiling))
}

// RuntimeTuningOf is the tuning a serving process of cfg applies: GOGC
// and GOMEMLIMIT in the environment (getenv) win; otherwise
// server.gc_percent or DefaultGCPercent, and a memory limit of 90 % of
// containerMemory (the memory of the process's cgroup, 0 when it has no
// limit; see ContainerMemory).
func RuntimeTuningOf(cfg *config.Config, getenv func(string) string, containerMemory int64) RuntimeTuning {
	var t RuntimeTuning
	if getenv("GOGC") == "" {
		t.GCPercent, t.Headroom = DefaultGCPercent, DefaultGCHeadroom
		if cfg.Server.GCPercent > 0 {
			t.GCPercent, t.Headroom = cfg.Server.GCPercent, 0 // as the file says
		}
	}
	if getenv("GOMEMLIMIT") == "" && containerMemory > 0 {
		t.MemoryLimit = int64(float64(containerMemory) * memoryLimitShare)
	}
	return t
}

// Apply sets the process's collector as t says. With a Headroom the
// process's one tuner follows the live heap every second under the tuning
// applied last; without, it leaves the target as set.
func (t RuntimeTuning) Apply() {
	if t.MemoryLimit > 0 {
		debug.SetMemoryLimit(t.MemoryLimit)
	}
	if t.GCPercent <= 0 {
		return
	}
	applied.Store(&t)
	if t.Headroom <= 0 {
		debug.SetGCPercent(t.GCPercent)
		return
	}
	tune()
	tunerOnce.Do(func() {
		go func() {
			for range time.Tick(time.Second) {
				tune()
			}
		}()
	})
}

var (
	// applied is the tuning Apply set last, which the tuner follows.
	applied atomic.Pointer[RuntimeTuning]
	// tunerOnce starts one tuner per process (tests serve several times).
	tunerOnce sync.Once
)

// tune sets the target from the live heap under the tuning applied last,
// when it has a headroom.
func tune() {
	t := applied.Load()
	if t == nil || t.Headroom <= 0 {
		return
	}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	debug.SetGCPercent(GCPercentFor(live[0].Value.Uint64(), t.GCPercent, t.Headroom))
}

// ContainerMemory is the memory limit of the process's cgroup in bytes
// (cgroup v2 memory.max, else v1 memory.limit_in_bytes), 0 when there is
// none or it cannot be read.
func ContainerMemory() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		return parseContainerMemory(string(b))
	}
	return 0
}

// parseContainerMemory reads a cgroup memory limit: "max" (v2) and v1's
// near-2^63 "unlimited" are no limit.
func parseContainerMemory(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
