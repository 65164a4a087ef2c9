package wiring

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"

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
}

// RuntimeTuningOf is the tuning a serving process of cfg applies: GOGC
// and GOMEMLIMIT in the environment (getenv) win; otherwise
// server.gc_percent or DefaultGCPercent, and a memory limit of 90 % of
// containerMemory (the memory of the process's cgroup, 0 when it has no
// limit; see ContainerMemory).
func RuntimeTuningOf(cfg *config.Config, getenv func(string) string, containerMemory int64) RuntimeTuning {
	var t RuntimeTuning
	if getenv("GOGC") == "" {
		t.GCPercent = DefaultGCPercent
		if cfg.Server.GCPercent > 0 {
			t.GCPercent = cfg.Server.GCPercent
		}
	}
	if getenv("GOMEMLIMIT") == "" && containerMemory > 0 {
		t.MemoryLimit = int64(float64(containerMemory) * memoryLimitShare)
	}
	return t
}

// Apply sets the process's collector as t says.
func (t RuntimeTuning) Apply() {
	if t.GCPercent > 0 {
		debug.SetGCPercent(t.GCPercent)
	}
	if t.MemoryLimit > 0 {
		debug.SetMemoryLimit(t.MemoryLimit)
	}
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
