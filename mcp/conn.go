package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/logging"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// server is one configured MCP server and its connection: a child process
// (stdio) or a session with an HTTP endpoint. A connection that ends — the
// process died, the endpoint went away — is started again on the next call,
// at most MaxRestarts times in a row, with a growing wait in between.
type server struct {
	cfg       ServerConfig
	log       logging.Logger
	now       func() time.Time
	lookupEnv func(string) (string, bool)

	// mu guards the fields below. It is held while connecting, so callers
	// that find the server stopped wait for one start instead of starting
	// one each.
	mu         sync.Mutex
	sess       *sdk.ClientSession
	proc       *exec.Cmd // stdio: the running child
	stderr     *tail
	httpStatus *statusTransport // http: the last HTTP status seen
	started    bool             // connected at least once
	closed     bool
	// failures counts connections that ended or could not be made since
	// the last successful call; restarts counts restarts since Connect.
	failures  int
	restarts  int
	notBefore time.Time
	// last says why the last connection ended or failed; lastKind is its
	// error kind (connection, auth).
	last     string
	lastKind string

	// goroutines are the server's own: a connection's watcher, the
	// closing of a dropped connection, a wait for a broken one to end.
	// Each starts under mu while the server is open (goLocked), and close
	// joins them, so none outlives the Set.
	goroutines sync.WaitGroup
}

// goLocked runs f on a goroutine the server owns (s.mu held, s open).
func (s *server) goLocked(f func()) { s.goroutines.Go(f) }

// conn is the connection a call used, so a failure is charged to that
// connection and not to one made since.
type conn struct {
	sess *sdk.ClientSession
}

// session returns the live session, connecting (or restarting) first when
// there is none. Its error is a *capabilities.Error: RETRIABLE while the
// server is being restarted, CRITICAL once the restarts are used up, or
// for a server that refuses the credentials.
func (s *server) session(ctx context.Context) (conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return conn{}, capabilities.NewError(capabilities.Critical, capabilities.KindConnection,
			fmt.Sprintf("MCP server %q is shut down", s.cfg.Name), nil)
	}
	if s.sess != nil {
		return conn{s.sess}, nil
	}
	now := s.now()
	if now.Before(s.notBefore) {
		return conn{}, s.unavailable(s.notBefore.Sub(now))
	}
	if s.started {
		s.restarts++
		s.log.Info("MCP server: restarting", "server", s.cfg.Name, "restart", s.failures, "of", s.cfg.maxRestarts(), "reason", s.last)
	}
	sess, err := s.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return conn{}, ctx.Err()
		}
		s.failed(err)
		return conn{}, s.unavailable(s.notBefore.Sub(s.now()))
	}
	s.started = true
	s.sess = sess
	s.stderr.mark() // start-up chatter is no reason for a later failure
	s.goLocked(func() { s.watch(sess) })
	return conn{sess}, nil
}

// unavailable is the error of a call that finds no connection: RETRIABLE
// after the wait while restarts are left, CRITICAL when they are used up
// or the server refuses capgraph's credentials.
func (s *server) unavailable(wait time.Duration) *capabilities.Error {
	what, noun := "restarting it", "restarts"
	if s.cfg.transport() == TransportHTTP {
		what, noun = "reconnecting", "reconnections"
	}
	md := map[string]any{"mcp_server": s.cfg.Name, "mcp_transport": string(s.cfg.transport()),
		"restarts_in_a_row": s.failures, "max_restarts": s.cfg.maxRestarts()}
	if s.last != "" {
		md["last_failure"] = s.last
	}
	if s.lastKind == capabilities.KindAuth {
		md[capabilities.MetaSuggestions] = []string{"check the credentials in the environment variables of mcp_servers." + s.cfg.Name + ".headers_env"}
		return &capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindAuth, Metadata: md,
			UserMessage: fmt.Sprintf("MCP server %q refused capgraph's credentials: %s", s.cfg.Name, s.last)}
	}
	if s.failures > s.cfg.maxRestarts() {
		md["server_state"] = "down"
		md[capabilities.MetaSuggestions] = []string{"check the server's command, URL and logs; it is tried again every " + MaxRestartBackoff.String()}
		return &capabilities.Error{Severity: capabilities.Critical, Kind: capabilities.KindConnection, Metadata: md,
			UserMessage: fmt.Sprintf("MCP server %q is down: it stopped or failed to start %d times in a row, and %d %s did not help (last: %s)", s.cfg.Name, s.failures, s.failures-1, plural(s.failures-1, noun), s.last)}
	}
	md["server_state"] = what
	return &capabilities.Error{Severity: capabilities.Retriable, Kind: capabilities.KindConnection, Metadata: md, RetryAfter: max(wait, 0),
		UserMessage: fmt.Sprintf("MCP server %q is unavailable (%s; %s, attempt %d of %d)", s.cfg.Name, s.last, what, s.failures, s.cfg.maxRestarts())}
}

// failed records a connection that ended or could not be made, and when
// the next one may be tried.
func (s *server) failed(err error) {
	s.failures++
	s.last = oneLine(err.Error())
	s.lastKind = capabilities.KindConnection
	if s.httpStatus != nil {
		if c := s.httpStatus.last.Load(); c == http.StatusUnauthorized || c == http.StatusForbidden {
			s.lastKind = capabilities.KindAuth
			s.last = fmt.Sprintf("the server answered HTTP %d %s: check the credentials in headers_env (%s)", c, http.StatusText(int(c)), s.last)
		}
	}
	if t := s.stderr.String(); t != "" {
		s.last += " (its last words on stderr: " + t + ")"
	}
	s.notBefore = s.now().Add(restartWait(s.failures, s.cfg.maxRestarts()))
	s.log.Warn("MCP server: connection failed", "server", s.cfg.Name, "error", s.last, "in_a_row", s.failures)
}

// restartWait is the wait before connection number n+1 after n failures
// in a row: none for the first restart, then 1s, 2s, 4s … up to
// MaxRestartBackoff, and MaxRestartBackoff once the restarts are used up.
func restartWait(n, maxRestarts int) time.Duration {
	if n > maxRestarts {
		return MaxRestartBackoff
	}
	if n <= 1 {
		return 0
	}
	d := DefaultRestartBackoff << (n - 2)
	if d > MaxRestartBackoff || d <= 0 {
		return MaxRestartBackoff
	}
	return d
}

// watch notices a connection that ends on its own (the process exited).
func (s *server) watch(sess *sdk.ClientSession) {
	err := sess.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != sess || s.closed {
		return
	}
	if s.proc != nil && s.proc.ProcessState != nil {
		// The process has been waited for (closing the connection does
		// that before Wait returns): its exit says more than the pipe's EOF.
		s.dropLocked(fmt.Errorf("the server exited (%s)", s.proc.ProcessState))
		return
	}
	s.dropLocked(fmt.Errorf("the connection ended: %s", exitText(err)))
}

// ended waits up to d for a stdio connection c a call found broken to
// end, so the failure can name the server's exit rather than a pipe error.
// The wait for the end goes on after d, until the connection is dropped
// or the server closed.
func (s *server) ended(c conn, d time.Duration) {
	done := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.goLocked(func() { _ = c.sess.Wait(); close(done) })
	s.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// drop ends a connection a call found broken. Only the connection the call
// used is dropped: another call may have reconnected already.
func (s *server) drop(c conn, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != c.sess || s.closed {
		return
	}
	s.dropLocked(cause)
}

func (s *server) dropLocked(cause error) {
	sess, proc := s.sess, s.proc
	s.sess, s.proc = nil, nil
	s.failed(cause)
	s.goLocked(func() {
		_ = sess.Close()
		killGroup(proc)
	})
}

// succeeded resets the restart count after a call that worked.
func (s *server) succeeded() {
	s.mu.Lock()
	s.failures, s.notBefore, s.last, s.lastKind = 0, time.Time{}, "", ""
	s.mu.Unlock()
}

// close ends the connection and, for stdio, the server's whole process
// group, and waits for the server's goroutines to end; later calls fail.
func (s *server) close() error {
	s.mu.Lock()
	s.closed = true
	sess, proc := s.sess, s.proc
	s.sess, s.proc = nil, nil
	s.mu.Unlock()
	var err error
	if sess != nil {
		err = sess.Close()
	}
	killGroup(proc)
	// The watcher ends with the connection just closed, a dropped
	// connection's closing within its TerminateDuration.
	s.goroutines.Wait()
	if err != nil && proc != nil && (isExit(err) || errors.Is(err, exec.ErrWaitDelay)) {
		// A child that exits with a status when its stdin closes, or
		// leaves a process holding its pipes (killed with its group), is
		// closed all the same.
		return nil
	}
	return err
}

// connect starts or reaches the server and makes the MCP handshake.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.connectTimeout())
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "capgraph", Version: version()},
		// capgraph offers the server nothing back (no roots, sampling or
		// elicitation): its tools are called by the agent, not a person.
		&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}})
	var t sdk.Transport
	switch s.cfg.transport() {
	case TransportHTTP:
		h, err := s.headers()
		if err != nil {
			return nil, err
		}
		s.httpStatus = &statusTransport{base: http.DefaultTransport, headers: h}
		t = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: &http.Client{Transport: s.httpStatus},
			// Calls are answered on their own requests; capgraph needs
			// no server-initiated messages, so no stream is held open.
			DisableStandaloneSSE: true}
	default:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = s.env()
		cmd.Dir = s.cfg.Dir
		s.stderr = newTail(s.log, s.cfg.Name)
		cmd.Stderr = s.stderr
		// A grandchild holding stderr open must not keep Wait (and so a
		// restart or shutdown) waiting.
		cmd.WaitDelay = time.Second
		ownGroup(cmd)
		s.proc = cmd
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	sess, err := client.Connect(ctx, t, nil)
	if err != nil {
		killGroup(s.proc)
		s.proc = nil
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer to the MCP handshake within %s: %w", s.cfg.connectTimeout(), err)
		}
		return nil, err
	}
	return sess, nil
}

// headers reads the configured header values from the environment.
func (s *server) headers() (http.Header, error) {
	h := http.Header{}
	keys := make([]string, 0, len(s.cfg.HeadersEnv))
	for k := range s.cfg.HeadersEnv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := s.lookupEnv(s.cfg.HeadersEnv[k])
		if !ok || v == "" {
			return nil, &envError{Server: s.cfg.Name, Header: k, Var: s.cfg.HeadersEnv[k]}
		}
		h.Set(k, v)
	}
	return h, nil
}

// envError: a header's environment variable is not set.
type envError struct{ Server, Header, Var string }

func (e *envError) Error() string {
	return fmt.Sprintf("the environment variable %s (header %s) is not set", e.Var, e.Header)
}

// env is a stdio server's environment: InheritedEnv from capgraph's, then
// the configured Env.
func (s *server) env() []string {
	var out []string
	for _, k := range InheritedEnv {
		if v, ok := s.lookupEnv(k); ok {
			out = append(out, k+"="+v)
		}
	}
	keys := make([]string, 0, len(s.cfg.Env))
	for k := range s.cfg.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+s.cfg.Env[k])
	}
	return out
}

// statusTransport adds the configured headers to every request and
// remembers the last status code (the SDK reports HTTP failures as text).
type statusTransport struct {
	base    http.RoundTripper
	headers http.Header
	last    atomic.Int64
}

func (t *statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.headers {
			req.Header[k] = vs
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		t.last.Store(int64(resp.StatusCode))
	}
	return resp, err
}

// tail keeps the last lines a child wrote to stderr, for error reports,
// and logs each line at debug level.
type tail struct {
	mu    sync.Mutex
	lines []string
	part  []byte
	log   logging.Logger
}

const tailLines = 5

func newTail(log logging.Logger, name string) *tail {
	return &tail{log: log.With("server", name)}
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.part = append(t.part, p...)
	for {
		i := slices.Index(t.part, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(t.part[:i]))
		t.part = t.part[i+1:]
		if line == "" {
			continue
		}
		t.log.Debug("MCP server stderr: " + line)
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		t.lines = append(t.lines, line)
		if len(t.lines) > tailLines {
			t.lines = t.lines[1:]
		}
	}
	if len(t.part) > 4096 {
		t.part = t.part[len(t.part)-4096:]
	}
	return len(p), nil
}

// mark forgets the lines so far.
func (t *tail) mark() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.lines = nil
	t.mu.Unlock()
}

// String returns the last lines, joined.
func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

func exitText(err error) string {
	if err == nil {
		return "the server closed the connection"
	}
	return oneLine(err.Error())
}

// plural drops the s of a plural noun for one.
func plural(n int, noun string) string {
	if n == 1 {
		return strings.TrimSuffix(noun, "s")
	}
	return noun
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// version is capgraph's module version, for the MCP handshake.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path == "github.com/capgraph/capgraph" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/capgraph/capgraph" {
				return d.Version
			}
		}
	}
	return "devel"
}
