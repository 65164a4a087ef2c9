package cli_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
)

// Hints name the program as the user ran it: the go run form for a binary
// go run built (in its temporary work directory or, since Go 1.24, cached
// in the build cache), the name for one on the PATH, else the path as
// typed, so a hint runs as printed.
func TestInvocation(t *testing.T) {
	bin := t.TempDir()
	installed := filepath.Join(bin, "capgraph")
	ownInstalled := filepath.Join(bin, "myagent")
	for _, f := range []string{installed, ownInstalled} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	local := &debug.BuildInfo{Path: "github.com/capgraph/capgraph/cmd/capgraph", Main: debug.Module{Path: "github.com/capgraph/capgraph", Version: "(devel)"}}
	own := &debug.BuildInfo{Path: "example.com/myagent", Main: debug.Module{Path: "example.com/myagent", Version: "(devel)"}}
	published := &debug.BuildInfo{Path: "github.com/capgraph/capgraph/cmd/capgraph", Main: debug.Module{Path: "github.com/capgraph/capgraph", Version: "v0.3.0"}}
	cached := "/home/op/.cache/go-build/12/" + strings.Repeat("ab", 32) + "-d/capgraph"
	tests := []struct {
		arg0 string
		bi   *debug.BuildInfo
		want string
	}{
		{"/tmp/go-build3915024420/b001/exe/capgraph", local, "go run ./cmd/capgraph"},
		{cached, local, "go run ./cmd/capgraph"},
		// A build cache elsewhere (GOCACHE set by the user or CI), and a
		// work directory under GOTMPDIR.
		{"/var/cache/ci-go/7f/" + strings.Repeat("0c", 32) + "-d/capgraph", local, "go run ./cmd/capgraph"},
		{"/scratch/tmp/go-build77/b001/exe/capgraph", local, "go run ./cmd/capgraph"},
		{"/tmp/go-build1/b001/exe/myagent", own, "go run ."},
		{"/tmp/go-build1/b001/exe/capgraph", published, "go run github.com/capgraph/capgraph/cmd/capgraph@v0.3.0"},
		// go install's binary on the PATH, by its name or its full path.
		{installed, local, "capgraph"},
		{"capgraph", local, "capgraph"},
		// … installed from a published version (go install …/cmd/capgraph@v0.3.0),
		// and a user's application installed with go install.
		{installed, published, "capgraph"},
		{"capgraph", published, "capgraph"},
		{ownInstalled, own, "myagent"},
		{"myagent", own, "myagent"},
		// A binary go build just made, run by its path: the path.
		{"./myagent", own, "./myagent"},
		{"/home/op/src/myagent/myagent", own, "/home/op/src/myagent/myagent"},
		{`C:\Users\op\src\myagent.exe`, own, `C:\Users\op\src\myagent.exe`},
		{"/tmp/go-build1/b001/exe/capgraph", nil, "/tmp/go-build1/b001/exe/capgraph"},
		// Not go run's: directories that only look a bit like it.
		{"/opt/go-build/bin/capgraph", local, "/opt/go-build/bin/capgraph"},
		{"/opt/ab/" + strings.Repeat("ab", 31) + "-d/capgraph", local, "/opt/ab/" + strings.Repeat("ab", 31) + "-d/capgraph"},
	}
	for _, tt := range tests {
		if got := cli.Invocation(tt.arg0, tt.bi); got != tt.want {
			t.Errorf("Invocation(%q) = %q, want %q", tt.arg0, got, tt.want)
		}
	}
}

// The usage text and every hint use Env.Program; bad usage exits 2.
func TestHintsUseTheProgramsInvocation(t *testing.T) {
	h := controlRoom(t)
	h.program = "go run ./cmd/capgraph"
	r := h.run("", "bogus")
	if r.code != cli.ExitUsage {
		t.Fatalf("exit %d, want %d", r.code, cli.ExitUsage)
	}
	mustContain(t, "stderr", r.stderr, `unknown command "bogus"`, "Run 'go run ./cmd/capgraph help' for usage.")
	r = h.run("", "help")
	mustContain(t, "help", r.stdout, "Usage: go run ./cmd/capgraph [--config FILE]")
	r = h.run("", "run", "What is the beam current?")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "(continue with: go run ./cmd/capgraph chat --thread ")
	r = h.run("/exit\n", "chat")
	mustContain(t, "chat", r.stdout, "bye — resume with: go run ./cmd/capgraph chat --thread ")
}
