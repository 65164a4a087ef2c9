package mcp

import "syscall"

// parentDeathSignal kills the server if capgraph itself is killed (SIGKILL
// leaves no time to close it).
func parentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
