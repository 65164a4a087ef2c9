package eval

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/state"
)

// Server is a running capgraph server evaluated through its native API
// (POST /api/threads/{id}/runs with the event stream, GET …/state).
// Faults cannot be injected into another process, and its event stream
// carries no failure or route events: a case with inject, allowed
// capabilities, max_execution_time or route.failures is an infrastructure
// error against a server.
type Server struct {
	// URL is the server's base URL ("http://127.0.0.1:8080").
	URL string
	// Key is the API key sent as a bearer token, if the server wants one.
	Key string
	// Name names the server in reports (default URL).
	Name string
	// SideEffects says whether a capability acts on the outside world
	// (the application's registry; safety.no_side_effects_planned needs
	// it). Nil: no capability does.
	SideEffects func(name string) bool
	// ModelNames name the models the server runs (as Target.ModelNames),
	// so a judge among them is refused.
	ModelNames []string
	// Client is the HTTP client (default http.DefaultClient).
	Client *http.Client
}

// RunServer runs every case of s against a running server.
func RunServer(ctx context.Context, s *Suite, srv Server, opts Options) (*Report, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := checkJudge(opts.Judge, Target{ModelNames: srv.ModelNames}); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(srv.URL, "http://") && !strings.HasPrefix(srv.URL, "https://") {
		return nil, fmt.Errorf("eval: server URL %q must start with http:// or https://", srv.URL)
	}
	srv.URL = strings.TrimRight(srv.URL, "/")
	if srv.Client == nil {
		srv.Client = http.DefaultClient
	}
	name := srv.Name
	if name == "" {
		name = srv.URL
	}
	return run(ctx, s, name, srv.open, opts), nil
}

// remoteSession is a case run as one thread of the server.
type remoteSession struct {
	srv    Server
	c      Case
	thread string
}

var threadUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.:-]`)

func (srv Server) open(ctx context.Context, c Case, repeat int) (session, error) {
	var unsupported []string
	if len(c.Inject) > 0 {
		unsupported = append(unsupported, "inject")
	}
	if c.AllowedCapabilities != nil {
		unsupported = append(unsupported, "allowed_capabilities")
	}
	if c.MaxExecutionTime > 0 {
		unsupported = append(unsupported, "max_execution_time")
	}
	if len(unsupported) > 0 {
		return nil, fmt.Errorf("%s needs the application in this process; a server runs its own (run without --server)", strings.Join(unsupported, ", "))
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	thread := fmt.Sprintf("eval-%s-%d-%s", threadUnsafe.ReplaceAllString(c.ID, "."), repeat+1, hex.EncodeToString(b[:]))
	rs := &remoteSession{srv: srv, c: c, thread: thread}
	resp, err := rs.request(ctx, http.MethodPost, "/api/threads", map[string]any{"id": thread, "metadata": map[string]string{"title": "eval " + c.ID}})
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return rs, nil
}

func (s *remoteSession) request(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.srv.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.srv.Key != "" {
		req.Header.Set("Authorization", "Bearer "+s.srv.Key)
	}
	resp, err := s.srv.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

func (s *remoteSession) turn(ctx context.Context, say string) (*Trace, error) {
	tr := &Trace{Input: say, failuresUnknown: true}
	began := time.Now()
	resp, err := s.request(ctx, http.MethodPost, "/api/threads/"+s.thread+"/runs",
		map[string]any{"input": say, "stream": true, "options": s.c.Options})
	if err != nil {
		return tr, err
	}
	err = readStream(resp.Body, tr)
	resp.Body.Close()
	tr.Duration = time.Since(began)
	if err != nil {
		return tr, err
	}
	resp, err = s.request(ctx, http.MethodGet, "/api/threads/"+s.thread+"/state", nil)
	if err != nil {
		return tr, err
	}
	defer resp.Body.Close()
	var ts struct {
		State *state.State `json:"state"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ts); err != nil {
		return tr, fmt.Errorf("the thread's state: %w", err)
	}
	if ts.State != nil {
		tr.finish(*ts.State)
	}
	return tr, nil
}

// readStream reads a run's SSE stream into tr: every agent event, then
// the error frame of a failed run and the end frame with the status.
func readStream(body io.Reader, tr *Trace) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64*1024), 32*1024*1024)
	var event string
	var data strings.Builder
	ended := false
	dispatch := func() error {
		defer func() { event = ""; data.Reset() }()
		switch event {
		case "", "heartbeat", "queued":
			return nil
		case "end":
			var end struct {
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(data.String()), &end); err != nil {
				return fmt.Errorf("end frame: %w", err)
			}
			tr.Status, ended = agent.RunStatus(end.Status), true
		case "error":
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal([]byte(data.String()), &e)
			tr.Fatal = e.Error.Message
		default:
			var ev agent.Event
			if err := json.Unmarshal([]byte(data.String()), &ev); err != nil {
				return fmt.Errorf("%s event: %w", event, err)
			}
			tr.add(ev)
		}
		return nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := dispatch(); err != nil {
				return err
			}
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := dispatch(); err != nil {
		return err
	}
	if !ended {
		return errors.New("the event stream ended without its end frame")
	}
	return nil
}

func (s *remoteSession) sideEffects(name string) bool {
	return s.srv.SideEffects != nil && s.srv.SideEffects(name)
}

// close deletes the case's thread.
func (s *remoteSession) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := s.request(ctx, http.MethodDelete, "/api/threads/"+s.thread, nil); err == nil {
		resp.Body.Close()
	}
}
