//go:build unix

package docstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const module = "github.com/capgraph/capgraph"

// programs are the repository's programs the documents run: `go run
// ./cmd/capgraph` and `go run ./examples/NAME`.
var programs = map[string]string{
	"./cmd/capgraph":         "capgraph",
	"./examples/controlroom": "controlroom",
	"./examples/weather":     "weather",
	"./examples/errortour":   "errortour",
}

// commandTimeout bounds one command of a document.
const commandTimeout = 3 * time.Minute

// docs lists the documents: README.md and docs/*.md.
func docs(t *testing.T, repo string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repo, "README.md")}, files...)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	return root
}

// goCmd is the go command of the toolchain running the test: go test puts
// that toolchain's bin directory first in the test's PATH.
func goCmd() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// goEnv reads a variable of `go env`, so the documents' go commands use
// this machine's caches under their own HOME.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(goCmd(), "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// buildFlags builds as the test binary was built: with -race under go test
// -race, so the programs reuse the packages the test run compiled.
func buildFlags() []string {
	if raceEnabled {
		return []string{"-race"}
	}
	return nil
}

// TestDocsBlocksAreMarked: every shell block and every whole Go file in the
// documents is run, compiled, or says why not; markers parse; an output
// block follows a run block.
func TestDocsBlocksAreMarked(t *testing.T) {
	repo := repoRoot(t)
	runs := 0
	for _, path := range docs(t, repo) {
		rel, _ := filepath.Rel(repo, path)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseBlocks(rel, string(text))
		if err != nil {
			t.Error(err)
			continue
		}
		lastRun := false
		for _, b := range blocks {
			switch {
			case shellInfo(b.info) && b.mark.kind != "run" && b.mark.kind != "skip" && b.mark.kind != "file" && b.mark.kind != "bench":
				t.Errorf("%s: a shell block without <!-- test: run --> or <!-- test: skip: WHY -->", b)
			case b.mark.kind == "bench":
				checkBench(t, repo, b)
			case b.info == "go" && strings.HasPrefix(strings.TrimSpace(b.text), "package ") && b.mark.kind != "compile" && b.mark.kind != "file" && b.mark.kind != "skip":
				t.Errorf("%s: a Go file without <!-- test: compile --> or <!-- test: file PATH -->", b)
			case b.mark.kind == "output" && !lastRun:
				t.Errorf("%s: an output block that follows no run block", b)
			case b.mark.kind == "compile" && b.info != "go":
				t.Errorf("%s: compile marks a %q block", b, b.info)
			}
			if b.mark.kind == "run" {
				runs++
			}
			lastRun = b.mark.kind == "run" || (lastRun && b.mark.kind == "output")
		}
	}
	if runs < 10 {
		t.Errorf("only %d run blocks: the markers are not being read", runs)
	}
}

func shellInfo(info string) bool {
	switch strings.Fields(info + " x")[0] {
	case "sh", "bash", "shell", "console":
		return true
	}
	return false
}

// TestDocs runs every document's marked blocks.
func TestDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the programs and runs the documents' commands")
	}
	repo := repoRoot(t)
	tools := buildTools(t, repo)
	for _, path := range docs(t, repo) {
		rel, _ := filepath.Rel(repo, path)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseBlocks(rel, string(text))
		if err != nil {
			t.Fatal(err)
		}
		if !hasWork(blocks) {
			continue
		}
		t.Run(filepath.Base(rel), func(t *testing.T) {
			t.Parallel()
			runDocument(t, repo, tools, blocks)
		})
	}
}

func hasWork(blocks []block) bool {
	for _, b := range blocks {
		if b.mark.kind == "run" || b.mark.kind == "compile" {
			return true
		}
	}
	return false
}

// toolset is what the documents run: the programs, built once.
type toolset struct {
	bin   string // the programs, on PATH
	gorun string // where go run would put them ("…/go-build0/b001/exe")
	env   []string
}

func buildTools(t *testing.T, repo string) toolset {
	t.Helper()
	dir := t.TempDir()
	ts := toolset{bin: filepath.Join(dir, "bin"), gorun: filepath.Join(dir, "go-build0", "b001", "exe")}
	if err := os.MkdirAll(ts.gorun, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"build"}, buildFlags()...)
	args = append(args, "-o", ts.bin+string(filepath.Separator))
	for pkg := range programs {
		args = append(args, pkg)
	}
	cmd := exec.Command(goCmd(), args...)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, name := range programs {
		if err := os.Symlink(filepath.Join(ts.bin, name), filepath.Join(ts.gorun, name)); err != nil {
			t.Fatal(err)
		}
	}
	goflags := strings.TrimSpace(goEnv(t, "GOFLAGS") + " -mod=mod")
	if raceEnabled {
		goflags += " -race"
	}
	ts.env = []string{
		"GOCACHE=" + goEnv(t, "GOCACHE"), "GOMODCACHE=" + goEnv(t, "GOMODCACHE"), "GOPATH=" + goEnv(t, "GOPATH"),
		"GOTOOLCHAIN=local", "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=" + goflags,
		"CAPGRAPH_REPO=" + repo,
	}
	return ts
}

// runDocument runs one document's blocks in order in one session.
func runDocument(t *testing.T, repo string, tools toolset, blocks []block) {
	s := newSession(t, tools)
	defer s.close()
	var last *runResult
	for _, b := range blocks {
		switch b.mark.kind {
		case "file":
			p := filepath.Join(s.cwd(), b.mark.path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
		case "compile":
			compileGo(t, repo, b)
		case "run":
			last = s.runBlock(b)
		case "output":
			if last == nil {
				t.Errorf("%s: no run block before this output", b)
				continue
			}
			got := s.normalize(last.output)
			if line, ok := matchOutput(b.text, got); !ok {
				t.Errorf("%s: the output of %s has no line matching\n\t%s\nafter the lines matched before; it printed:\n%s", b, last.block, line, got)
			}
		}
	}
}

// runResult is what a run block printed.
type runResult struct {
	block  block
	output string
}

// session is one bash process a document's commands run in.
type session struct {
	t     *testing.T
	tools toolset
	dir   string // the document's directory, the session's first working directory
	home  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	done  chan struct{}

	addr   string // the address of the last serve, replacing 8080
	serves int
}

func newSession(t *testing.T, tools toolset) *session {
	t.Helper()
	dir := t.TempDir()
	s := &session{t: t, tools: tools, dir: filepath.Join(dir, "work"), home: filepath.Join(dir, "home"), lines: make(chan string, 1024), done: make(chan struct{})}
	for _, d := range []string{s.dir, s.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir = s.dir
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	path := strings.Join([]string{filepath.Join(s.home, "go", "bin"), tools.bin, filepath.Dir(goCmd()), os.Getenv("PATH")}, string(os.PathListSeparator))
	s.cmd.Env = append([]string{
		"PATH=" + path, "HOME=" + s.home, "USER=docs", "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=" + os.TempDir(),
		"GOBIN=" + filepath.Join(s.home, "go", "bin"),
		"DOCS_STATE=" + filepath.Join(dir, "state"),
		// npx keeps the machine's package cache (the tests' MCP server).
		"npm_config_cache=" + npmCache(), "npm_config_prefer_offline=true", "npm_config_update_notifier=false",
	}, tools.env...)
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := s.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.in = in
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		defer close(s.done)
		r := bufio.NewReader(pr)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				s.lines <- l
			}
			if err != nil {
				close(s.lines)
				return
			}
		}
	}()
	return s
}

func npmCache() string {
	if c := os.Getenv("npm_config_cache"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".npm")
}

// cwd is the session's working directory now (a document may cd).
func (s *session) cwd() string {
	out, _, err := s.exec("pwd", nil, 10*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

const endMark = "__DOCSTEST_END__ "

// exec runs one command in the session and returns what it printed and its
// exit status.
func (s *session) exec(command string, input []string, timeout time.Duration) (string, int, error) {
	stdin := "/dev/null"
	if input != nil {
		f, err := os.CreateTemp("", "docs-input-")
		if err != nil {
			return "", 0, err
		}
		defer os.Remove(f.Name())
		if _, err := f.WriteString(strings.Join(input, "\n") + "\n"); err != nil {
			return "", 0, err
		}
		f.Close()
		stdin = f.Name()
	}
	script := fmt.Sprintf("{ %s\n} <%q 2>&1; printf '\\n%s%%d\\n' $?\n", command, stdin, endMark)
	if _, err := io.WriteString(s.in, script); err != nil {
		return "", 0, fmt.Errorf("the shell is gone: %w", err)
	}
	var out strings.Builder
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return out.String(), 0, errors.New("the shell ended")
			}
			if rest, found := strings.CutPrefix(l, endMark); found {
				code, _ := strconv.Atoi(strings.TrimSpace(rest))
				return strings.TrimSuffix(out.String(), "\n"), code, nil
			}
			out.WriteString(l)
		case <-timer.C:
			return out.String(), 0, fmt.Errorf("no end after %s", timeout)
		}
	}
}

// runBlock runs a run block's commands, each of which must exit 0 but the
// last, which must exit with the marker's status.
func (s *session) runBlock(b block) *runResult {
	t := s.t
	for _, need := range b.mark.needs {
		if _, err := exec.LookPath(need); err != nil {
			if os.Getenv("CI") == "true" {
				t.Errorf("%s: needs %s, which is not installed (CI=true)", b, need)
			} else {
				t.Logf("%s: skipped: needs %s", b, need)
			}
			return &runResult{block: b}
		}
	}
	cmds := commands(b.text)
	res := &runResult{block: b}
	for i, c := range cmds {
		if why, ok := notRunning(b.mark, c); ok {
			t.Logf("%s: not run: %s (%s)", b, firstLine(c), why)
			continue
		}
		var input []string
		want := 0
		if i == len(cmds)-1 {
			input, want = b.mark.input, b.mark.exit
		}
		rewritten, err := s.rewrite(c)
		if err != nil {
			t.Fatalf("%s: %s: %v", b, firstLine(c), err)
		}
		out, code, err := s.exec(rewritten, input, commandTimeout)
		if input != nil {
			out = echoInput(out, input)
		}
		res.output += out + "\n"
		if err != nil {
			t.Fatalf("%s: %s: %v\n%s", b, firstLine(c), err, out)
		}
		if code != want {
			t.Fatalf("%s: %s exited %d, want %d; it printed:\n%s%s", b, firstLine(c), code, want, out, offlineHint(out))
		}
	}
	return res
}

// offlineHint explains a go command that needed a module the cache lacks:
// the documents' commands run offline (GOPROXY=off).
func offlineHint(out string) string {
	if !strings.Contains(out, "module lookup disabled by GOPROXY=off") {
		return ""
	}
	return "\n(the module cache lacks modules of the module graph: the README's test command fills it," +
		" or run `source scripts/setup/gomodules.sh` before this test)"
}

func notRunning(m marker, cmd string) (string, bool) {
	for _, n := range m.not {
		if strings.HasPrefix(strings.TrimSpace(cmd), n.prefix) {
			return n.why, true
		}
	}
	return "", false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

var (
	goRun    = regexp.MustCompile(`\bgo run (\./cmd/capgraph|\./examples/[a-z]+)\b`)
	gitClone = regexp.MustCompile(`\bgit clone https://github\.com/capgraph/capgraph(\.git)?\b`)
	goInst   = regexp.MustCompile(`\bgo install (\./cmd/capgraph)\b`)
	port8080 = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):8080\b`)
	envWord  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=\S*$`)
	comment  = regexp.MustCompile(`\s+#[^'"]*$`)
)

// rewrite turns a document's command into what runs here (see the package
// doc): the programs built once, the repository for go install and git clone,
// a serve in the background on a free port.
func (s *session) rewrite(c string) (string, error) {
	var err error
	c = goRun.ReplaceAllStringFunc(c, func(m string) string {
		pkg := strings.TrimPrefix(m, "go run ")
		name, ok := programs[pkg]
		if !ok {
			err = fmt.Errorf("no program %s", pkg)
		}
		return filepath.Join(s.tools.gorun, name)
	})
	if err != nil {
		return "", err
	}
	c = goInst.ReplaceAllString(c, `go install -C "$$CAPGRAPH_REPO" $1`)
	c = gitClone.ReplaceAllString(c, `ln -s "$$CAPGRAPH_REPO" capgraph`)
	if isServe(c) {
		return s.serve(c), nil
	}
	if port8080.MatchString(c) {
		if s.addr == "" {
			return "", errors.New("a request to port 8080 before the document starts a server")
		}
		c = port8080.ReplaceAllString(c, s.addr)
	}
	return c, nil
}

// isServe reports whether a command starts one of the programs' serve.
func isServe(c string) bool {
	words := strings.Fields(strings.TrimSuffix(strings.TrimSpace(comment.ReplaceAllString(c, "")), "&"))
	for len(words) > 0 && envWord.MatchString(words[0]) {
		words = words[1:]
	}
	if len(words) < 2 {
		return false
	}
	prog := filepath.Base(words[0])
	known := false
	for _, name := range programs {
		known = known || prog == name
	}
	if !known && !strings.HasPrefix(prog, "myagent") {
		return false
	}
	for _, w := range words[1:] {
		if w == "serve" {
			return true
		}
	}
	return false
}

// serve starts a serve command in the background on a free port and waits
// for its banner, which is the command's output.
func (s *session) serve(c string) string {
	c = strings.TrimSuffix(strings.TrimSpace(comment.ReplaceAllString(c, "")), "&")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	ln.Close()
	s.serves++
	log := fmt.Sprintf(`"$DOCS_STATE/serve-%d.log"`, s.serves)
	return fmt.Sprintf(`%s --addr %s >%s 2>&1 &
echo $! >>"$DOCS_STATE/pids"
for i in $(seq 1 1200); do grep -q 'Press Ctrl-C to stop' %s && break; kill -0 $! 2>/dev/null || break; sleep 0.1; done
cat %s
grep -q 'Press Ctrl-C to stop' %s`, c, s.addr, log, log, log, log)
}

// normalize makes an output read as it would for the documents' user: the
// session's HOME is /home/you and the server's port 8080.
func (s *session) normalize(out string) string {
	out = strings.ReplaceAll(out, s.home, "/home/you")
	if s.addr != "" {
		out = strings.ReplaceAll(out, s.addr, "127.0.0.1:8080")
	}
	return out
}

// close stops the servers the document started (SIGTERM, as Ctrl-C would,
// then SIGKILL) and the shell.
func (s *session) close() {
	pids := s.pids()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			s.t.Errorf("serve (pid %d) did not stop on SIGTERM", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	s.in.Close()
	waited := make(chan error, 1)
	go func() { waited <- s.cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-waited
	}
	<-s.done
}

func (s *session) pids() []int {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(s.dir), "state", "pids"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

var compileOnce sync.Mutex

// compileGo builds a complete Go program of the documents in a module of
// its own that requires capgraph from this repository.
func compileGo(t *testing.T, repo string, b block) {
	t.Helper()
	compileOnce.Lock() // one go build at a time: 2 cores are shared
	defer compileOnce.Unlock()
	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/docs\n\ngo 1.26\n\nrequire %s v0.0.0-00010101000000-000000000000\n\nreplace %s => %s\n", module, module, repo)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(b.text)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	for _, args := range [][]string{{"mod", "tidy"}, append(append([]string{"build"}, buildFlags()...), "-o", os.DevNull, ".")} {
		cmd := exec.Command(goCmd(), args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: go %s: %v\n%s", b, strings.Join(args, " "), err, out)
			return
		}
	}
}
