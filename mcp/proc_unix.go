//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts a stdio server in a process group of its own, so that
// closing it can end every process it started (npx starts node, a shell
// script starts its program) and a terminal's Ctrl-C reaches capgraph
// alone, which then closes its servers in order.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	parentDeathSignal(cmd.SysProcAttr)
}

// killGroup kills what is left of a stdio server's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
