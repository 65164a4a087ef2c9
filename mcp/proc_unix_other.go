//go:build unix && !linux

package mcp

import "syscall"

func parentDeathSignal(*syscall.SysProcAttr) {}
