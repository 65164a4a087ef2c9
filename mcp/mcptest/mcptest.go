// Package mcptest runs the third-party MCP server capgraph's tests use,
// @modelcontextprotocol/server-everything (pinned in
// mcp/testdata/everything/package-lock.json, installed by
// scripts/setup/npm.sh), over stdio and over streamable HTTP, and checks
// for processes left behind.
//
// When node or the package is missing a test skips — and fails under
// CI=true, where the set-up must have installed them.
package mcptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Dir is the npm package directory of the test servers.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "everything")
}

// Everything returns node and the arguments that start server-everything
// over stdio, or skips the test (fails under CI=true) when they are not
// installed.
func Everything(t testing.TB) (command string, args []string) {
	t.Helper()
	node, err := exec.LookPath("node")
	script := filepath.Join(Dir(), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(script):
		missing = "@modelcontextprotocol/server-everything is not installed (run: source scripts/setup/npm.sh)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node, []string{script, "stdio"}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// HTTPServer is server-everything serving streamable HTTP.
type HTTPServer struct {
	// URL is the MCP endpoint (http://127.0.0.1:PORT/mcp).
	URL string

	t    testing.TB
	port int
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// EverythingHTTP starts server-everything's streamable HTTP transport on a
// free port; it is stopped when the test ends.
func EverythingHTTP(t testing.TB) *HTTPServer {
	t.Helper()
	node, args := Everything(t)
	h := &HTTPServer{t: t}
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		err = h.start(node, args[0])
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("server-everything (streamable HTTP) did not start: %v", err)
		}
	}
	h.URL = fmt.Sprintf("http://127.0.0.1:%d/mcp", h.port)
	t.Cleanup(h.Kill)
	return h
}

func (h *HTTPServer) start(node, script string) error {
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(h.port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var lines []string
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			if !signalled && strings.Contains(line, "listening on port") {
				ready <- nil
				signalled = true
			}
		}
		if !signalled {
			ready <- fmt.Errorf("exited: %s", strings.Join(lines, " | "))
		}
	}()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case err := <-ready:
		if err != nil {
			<-done
			return err
		}
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("no 'listening on port' within 30s")
	}
	h.mu.Lock()
	h.cmd, h.done = cmd, done
	h.mu.Unlock()
	return nil
}

// Kill stops the server at once (SIGKILL), as a crash would, and waits
// until it is gone.
func (h *HTTPServer) Kill() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Restart starts the server again on the same port (after Kill).
func (h *HTTPServer) Restart() {
	h.t.Helper()
	node, args := Everything(h.t)
	var err error
	for try := 0; try < 20; try++ {
		if err = h.start(node, args[0]); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may still be held
	}
	h.t.Fatalf("server-everything did not start again: %v", err)
}

// Alive reports whether a process exists and is not a zombie.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// pid (comm) STATE …: the comm may hold spaces and parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			return s[i+2] != 'Z' && s[i+2] != 'X'
		}
	}
	return syscall.Kill(pid, 0) == nil
}

// Group lists the live processes of process group pgid (Linux: from
// /proc; elsewhere only pgid itself is checked).
func Group(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if Alive(pgid) {
			return []int{pgid}
		}
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After "(comm) ": state ppid pgrp …
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// MarkerVar is the environment variable Marked looks for.
const MarkerVar = "CAPGRAPH_MCPTEST_MARKER"

// Marker returns a value unique to the test, to put in a server's
// environment (MarkerVar) so that Marked finds every process it started,
// whatever became of its process group.
func Marker(t testing.TB) string {
	return fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())
}

// Marked lists the live processes whose environment holds MarkerVar=value
// (Linux: from /proc; elsewhere nothing).
func Marked(value string) []int {
	want := []byte(MarkerVar + "=" + value + "\x00")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !Alive(pid) {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && strings.Contains(string(env)+"\x00", string(want)) {
			out = append(out, pid)
		}
	}
	return out
}

// Gone waits up to d for every process with the marker to end, and
// returns those still alive.
func Gone(value string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := Marked(value)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}
