package wiring

import (
	"runtime/debug"

	"github.com/capgraph/capgraph/config"
)

// SetGCPercent sets the garbage collector's target of a serving process to
// server.gc_percent (config.DefaultGCPercent when 0), unless the environment
// sets GOGC: a deployer's explicit choice wins over the file. It returns the
// target in effect and the setting it came from. `capgraph serve` calls it;
// a program embedding capgraph keeps its own settings unless it does too.
func (r *Runtime) SetGCPercent() (percent int, source string) {
	if v := r.opts.Getenv("GOGC"); v != "" {
		// The runtime read it at start; asking leaves it as it is.
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p, "GOGC"
	}
	percent, source = r.cfg.Server.GCPercent, "server.gc_percent"
	if percent == 0 {
		percent, source = config.DefaultGCPercent, "default"
	}
	debug.SetGCPercent(percent)
	return percent, source
}
