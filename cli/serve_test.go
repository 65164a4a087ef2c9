package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
)

var pageLine = regexp.MustCompile(`web page:\s+(http://\S+)/\n`)

// serve starts on 127.0.0.1:0, prints the web page and the OpenAI base
// URL, answers /healthz, /v1/models and a demo question, and stops when its
// context is canceled.
func TestServeStartsAnswersAndStopsOnCancel(t *testing.T) {
	h := controlRoom(t)
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- h.app.Run(ctx, h.environment(strings.NewReader(""), &stdout, &stderr, []string{"serve", "--addr", "127.0.0.1:0"}))
	}()
	var base string
	deadline := time.Now().Add(30 * time.Second)
	for base == "" {
		if m := pageLine.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s %s", code, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q", stdout.String())
		}
	}
	mustContain(t, "banner", stdout.String(), "OpenAI-compatible base URL:   "+base+"/v1", "offline mode", "store:                        sqlite:", "curl -s "+base+"/v1/chat/completions")

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	mustContain(t, "/healthz", get("/healthz"), `"ok"`)
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(get("/v1/models")), &models); err != nil || len(models.Data) != 1 || models.Data[0].ID != "capgraph" {
		t.Fatalf("/v1/models: %+v %v", models, err)
	}
	// The web page offers the application's demo questions.
	mustContain(t, "/api/info", get("/api/info"), `"What is the beam current?"`)
	resp, err := http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"capgraph","messages":[{"role":"user","content":"What is the beam current?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	err = json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()
	if err != nil || len(chat.Choices) != 1 {
		t.Fatalf("chat completion: %+v %v", chat, err)
	}
	mustContain(t, "answer", chat.Choices[0].Message.Content, "SR:DCCT:CURRENT", "mA")

	cancel()
	select {
	case code := <-done:
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	mustContain(t, "stderr", stderr.String(), "server stopped")
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still listening after shutdown")
	}
}

func TestServeRefusesPublicAddressWithoutKeys(t *testing.T) {
	r := controlRoom(t).run("", "--store", "memory", "serve", "--addr", "0.0.0.0:0")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "--addr 0.0.0.0:0 is not a loopback address; refusing to listen without API keys",
		"server.api_keys", "CAPGRAPH_API_KEYS=name=key")

	// From the file: the key and its line are named.
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "store: memory\nserver:\n  addr: 0.0.0.0:0\n")
	r = h.run("", "serve")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "line 3: server.addr: 0.0.0.0:0 is not a loopback address", "CAPGRAPH_API_KEYS")
}

// Issue 13 item 12: a key of CAPGRAPH_API_KEYS meets the rule of the YAML
// file's keys (16 characters at least); serve refuses a short one, naming
// the variable once and the entry, without repeating the key.
func TestServeRefusesShortEnvKey(t *testing.T) {
	h := controlRoom(t)
	h.env["CAPGRAPH_API_KEYS"] = "ops=0123456789abcdef-ops,ci=k3y"
	r := h.run("", "--store", "memory", "serve", "--addr", "127.0.0.1:0")
	if r.code != cli.ExitError {
		t.Fatalf("exit %d", r.code)
	}
	mustContain(t, "stderr", r.stderr, "CAPGRAPH_API_KEYS: entry 2 (ci): the key is 3 characters; use at least 16")
	if strings.Count(r.stderr, "CAPGRAPH_API_KEYS") != 1 || strings.Contains(r.stderr, "k3y") {
		t.Errorf("stderr: %s", r.stderr)
	}
}

// A port another program holds: serve says so and names the flag and the
// key that choose another.
func TestServeBusyPortNamesFlagAndKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	r := controlRoom(t).run("", "--store", "memory", "serve", "--addr", addr)
	if r.code != cli.ExitError {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "cannot listen on "+addr+": the port is in use", "--addr 127.0.0.1:", "server.addr in capgraph.yaml")
}

// serve's banner says which configuration file, store, models and write
// switch it runs with, and how to enable writes.
func TestServeBannerSaysWhatItRunsWith(t *testing.T) {
	banner := func(h *harness, args ...string) string {
		t.Helper()
		var stdout, stderr syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() {
			done <- h.app.Run(ctx, h.environment(strings.NewReader(""), &stdout, &stderr, append(args, "serve", "--addr", "127.0.0.1:0")))
		}()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(stdout.String(), "Press Ctrl-C to stop.") {
			select {
			case code := <-done:
				t.Fatalf("serve exited %d: %s", code, stderr.String())
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no banner: %q", stdout.String())
			}
		}
		cancel()
		<-done
		return stdout.String()
	}
	h := controlRoom(t)
	out := banner(h)
	mustContain(t, "default banner", out,
		"  configuration:                none: the built-in defaults (no capgraph.yaml here",
		"  store:                        sqlite:"+h.env["XDG_DATA_HOME"],
		"  models:                       none: offline mode",
		"  writes:                       disabled: channel_write is refused; to allow it, set control_system.writes_enabled: true in capgraph.yaml",
		"  API keys:                     none: only clients on this machine")

	h.env["CAPGRAPH_TEST_KEY"] = "sk-test"
	h.env["CAPGRAPH_API_KEYS"] = "ops=0123456789abcdef-ops"
	file := h.writeConfig("site.yaml", `models:
  default: {provider: openai, model: gpt-4o-mini, api_key_env: CAPGRAPH_TEST_KEY}
  response: {model: gpt-4o}
fallback: offline
control_system:
  writes_enabled: true
store: postgres://capgraph:secret-password@db.example:5432/capgraph
`)
	out = banner(h, "--config", file, "--store", "memory")
	mustContain(t, "configured banner", out,
		"configuration:                "+file,
		"store:                        memory",
		"models:                       openai gpt-4o-mini (task_extraction, classifier, orchestrator, approval, error); openai gpt-4o (response); offline answers when a provider cannot be reached",
		"writes:                       enabled: channel_write may act, each change after a human's approval",
		"API keys:                     1 (server.api_keys, CAPGRAPH_API_KEYS)",
		`-H "Authorization: Bearer $KEY"`)
}

// A run cut between two steps (here: canceled while its second step runs,
// as a crash or Ctrl-C would) is finished by the next serve on the same
// SQLite store, from its last checkpoint: the first step does not run again.
// cutApp is an App whose turn "read the beam sensor" runs find_sensor, then
// read_sensor, whose first execution blocks until its context ends; started
// is closed when it does. finds and reads count executions.
func cutApp() (app cli.App, started chan struct{}, finds, reads *atomic.Int32) {
	finds, reads = new(atomic.Int32), new(atomic.Int32)
	started = make(chan struct{})
	guide := &capabilities.ClassifierGuide{Instructions: "Use to read the beam sensor.",
		Examples: []capabilities.ClassifierExample{{Query: "read the beam sensor", Result: true, Reason: "sensor"}}}
	app = cli.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
		find := capabilities.Define(capabilities.Definition{
			Name: "find_sensor", Description: "Find the sensor of the beam", Provides: []string{"SENSOR"}, ClassifierGuide: guide,
			Run: func(ctx context.Context, s capabilities.Step) (capabilities.Output, error) {
				finds.Add(1)
				return capabilities.Result("SENSOR", "S1", "sensor S1"), nil
			},
		})
		read := capabilities.Define(capabilities.Definition{
			Name: "read_sensor", Description: "Read the beam sensor value", Provides: []string{"VALUE"},
			Requires: []capabilities.Requirement{{Type: "SENSOR"}}, ClassifierGuide: guide,
			Run: func(ctx context.Context, s capabilities.Step) (capabilities.Output, error) {
				if reads.Add(1) == 1 {
					close(started)
					<-ctx.Done()
					return capabilities.Output{}, ctx.Err()
				}
				return capabilities.Result("VALUE", 42.0, "sensor S1 reads 42.0"), nil
			},
		})
		return []capabilities.Capability{find, read}, nil
	}}
	return app, started, finds, reads
}

// cutRun starts the turn on thread "cut" and cancels it while read_sensor runs.
func cutRun(t *testing.T, h *harness, started chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-started; cancel() }()
	var out, errb syncBuffer
	if code := h.app.Run(ctx, h.environment(strings.NewReader(""), &out, &errb, []string{"run", "--thread", "cut", "read the beam sensor"})); code != cli.ExitInfrastructure {
		t.Fatalf("canceled run: exit %d %s", code, errb.String())
	}
	mustContain(t, "canceled run", errb.String(), "capgraph: interrupted: the run stopped at its last checkpoint (finish it with: capgraph chat --thread cut)")
}

func TestServeResumesStoppedRuns(t *testing.T) {
	app, started, finds, reads := cutApp()
	h := newHarness(t, app)
	cutRun(t, h, started)
	sv := startServe(h, app, "--addr", "127.0.0.1:0")
	sv.waitFor(t, &sv.errb, "resumed runs stopped by a crash or shutdown", "no resume")
	if code := sv.stop(); code != cli.ExitOK {
		t.Fatalf("serve exit %d", code)
	}
	r := h.run("", "graph", "--thread", "cut")
	mustContain(t, "plan after resume", r.stdout, "1. find_sensor — done", "2. read_sensor after 1 — done")
	if finds.Load() != 1 || reads.Load() != 2 {
		t.Errorf("find ran %d times, read %d; want 1 and 2", finds.Load(), reads.Load())
	}
}

// serve --resume=false leaves a cut run as it is.
func TestServeResumeFalse(t *testing.T) {
	app, started, _, reads := cutApp()
	h := newHarness(t, app)
	cutRun(t, h, started)
	sv := startServe(h, app, "--resume=false", "--addr", "127.0.0.1:0")
	sv.waitFor(t, &sv.out, "Press Ctrl-C to stop.", "no banner")
	time.Sleep(200 * time.Millisecond)
	sv.stop()
	r := h.run("", "graph", "--thread", "cut")
	mustContain(t, "plan", r.stdout, "1. find_sensor — done", "2. read_sensor after 1 — pending")
	if reads.Load() != 1 || strings.Contains(sv.errb.String(), "resumed runs") {
		t.Errorf("read ran %d times; stderr %s", reads.Load(), sv.errb.String())
	}
}

// chat --thread finishes a cut run before the conversation goes on.
func TestChatFinishesCutRun(t *testing.T) {
	app, started, finds, reads := cutApp()
	h := newHarness(t, app)
	cutRun(t, h, started)
	r := h.run("", "chat", "--thread", "cut")
	mustContain(t, "chat", r.stdout, "(the last run was interrupted; finishing it)", "sensor S1 reads 42.0")
	if finds.Load() != 1 || reads.Load() != 2 {
		t.Errorf("find ran %d times, read %d; want 1 and 2", finds.Load(), reads.Load())
	}
}

// serving is `serve` running in the background until stop.
type serving struct {
	out, errb syncBuffer
	cancel    context.CancelFunc
	done      chan int
}

// startServe runs `serve args...` of app in the background.
func startServe(h *harness, app cli.App, args ...string) *serving {
	ctx, cancel := context.WithCancel(context.Background())
	sv := &serving{cancel: cancel, done: make(chan int, 1)}
	go func() {
		sv.done <- app.Run(ctx, h.environment(strings.NewReader(""), &sv.out, &sv.errb, append([]string{"serve"}, args...)))
	}()
	return sv
}

// waitFor waits up to 30 s until buf (sv.out or sv.errb) holds text; else it
// stops serve and fails the test with what, showing stderr.
func (sv *serving) waitFor(t *testing.T, buf *syncBuffer, text, what string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(buf.String(), text); {
		if time.Now().After(deadline) {
			sv.stop()
			t.Fatalf("%s: %s", what, sv.errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop cancels serve and returns its exit code.
func (sv *serving) stop() int {
	sv.cancel()
	return <-sv.done
}
