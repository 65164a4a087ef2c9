//go:build unix

package agent_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, all threads (user +
// system): what a benchmark's work cost, whatever else runs on the machine.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
