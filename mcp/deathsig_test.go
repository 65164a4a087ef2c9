//go:build linux

package mcp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capgraph/capgraph/mcp/mcptest"
)

// childEnv makes the test binary a capgraph stand-in that starts a stdio
// server, prints its pid and waits to be killed.
const childEnv = "CAPGRAPH_MCP_TEST_CHILD"

func init() {
	if os.Getenv(childEnv) == "" {
		return
	}
	args := strings.Split(os.Getenv(childEnv), "\x1f")
	set, err := Connect(context.Background(), []ServerConfig{{Name: "orphan", Command: args[0], Args: args[1:]}}, Options{})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("PID", set.Servers()[0].PID)
	select {}
}

// capgraph killed with SIGKILL (no time to close anything): its stdio
// server dies with it, as docs/mcp.md says — here a shell that would
// otherwise go on after its node exits.
func TestServerDiesWithCapgraph(t *testing.T) {
	node, args := mcptest.Everything(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	server := []string{"sh", "-c", `"$1" "$2" stdio; sleep 600`, "sh", node, args[0]}
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(server, "\x1f"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "PID ") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child said %q: %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PID ")))
	if !mcptest.Alive(pid) {
		t.Fatalf("server %d not running", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for mcptest.Alive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if mcptest.Alive(pid) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("server %d outlived capgraph", pid)
	}
}
