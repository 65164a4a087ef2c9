package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
)

// result is what one command line printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// harness runs command lines of an App in a private directory with a
// private environment (HOME and XDG_DATA_HOME point into the test's
// temporary directory, so the default SQLite store never touches the real
// home).
type harness struct {
	t    *testing.T
	app  cli.App
	dir  string
	env  map[string]string
	term bool
	// program is Env.Program ("" : the App's name).
	program string
	// width is Env.Width (0: 80, what an unknown terminal gets).
	width int
}

func newHarness(t *testing.T, app cli.App) *harness {
	t.Helper()
	dir := t.TempDir()
	return &harness{t: t, app: app, dir: dir, env: map[string]string{
		"HOME": filepath.Join(dir, "home"), "XDG_DATA_HOME": filepath.Join(dir, "data"),
	}}
}

// writeConfig writes capgraph.yaml in the harness directory.
func (h *harness) writeConfig(name, text string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) environment(stdin io.Reader, stdout, stderr io.Writer, args []string) cli.Env {
	term := h.term
	return cli.Env{
		Args: args, Stdin: stdin, Stdout: stdout, Stderr: stderr, Dir: h.dir, Terminal: &term,
		Getenv: func(k string) string { return h.env[k] }, Program: h.program, Width: h.width,
	}
}

// run runs one command line with stdin.
func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := h.app.Run(ctx, h.environment(strings.NewReader(stdin), &out, &errb, args))
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// mustContain fails unless s contains every want.
func mustContain(t *testing.T, what, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func statFile(p string) (os.FileInfo, error) { return os.Stat(p) }

// threadOf finds the thread id in "thread ID (continue with: …)".
func threadOf(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "thread" {
			return f[1]
		}
	}
	t.Fatalf("no thread line in %q", stderr)
	return ""
}
