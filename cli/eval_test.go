package cli_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/llm/llmtest/openaitest"
)

const evalCases = `
name: room
cases:
  - id: current
    tags: [read]
    turns: ["What is the beam current?"]
    expect:
      trajectory: {planned: {exact: [channel_finding, channel_read]}}
      answer: {contains: [SR:DCCT:CURRENT], number: {value: 500.2, unit: mA, tolerance: 0.5}}
  - id: flaky
    tags: [fault]
    turns: ["What is the beam current?"]
    inject: [{capability: channel_read, fault: retriable, retry_after: 10ms}]
    expect:
      route: {retries: 1, recovered: true, failures: [{severity: retriable, went: retry}]}
`

// eval exits 0 when every case passes, prints each case and the summary,
// and writes JUnit a CI system reads.
func TestEvalPasses(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("cases.yaml", evalCases)
	r := h.run("", "eval", "cases.yaml", "--junit", "out/junit.xml", "--json", "out/report.json")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "eval", r.stdout, "current  pass", "flaky    pass", "pass_rate   2/2", "PASS: 2 cases, 2 runs, 0 infrastructure errors")
	var junit struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	data, err := os.ReadFile(filepath.Join(h.dir, "out/junit.xml"))
	if err == nil {
		err = xml.Unmarshal(data, &junit)
	}
	if err != nil || junit.Tests != 2 || junit.Failures != 0 || junit.Suites[0].Name != "room" || junit.Suites[0].Cases[1].Name != "flaky" {
		t.Fatalf("junit %+v, %v:\n%s", junit, err, data)
	}
	var rep struct {
		Passed bool `json:"passed"`
		Cases  []struct {
			Runs []struct {
				Turns []struct {
					Retries int `json:"retries"`
				} `json:"turns"`
			} `json:"runs"`
		} `json:"cases"`
	}
	data, err = os.ReadFile(filepath.Join(h.dir, "out/report.json"))
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil || !rep.Passed || rep.Cases[1].Runs[0].Turns[0].Retries != 1 {
		t.Fatalf("json report %+v, %v", rep, err)
	}
}

func TestEvalExitStatuses(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("wrong.yaml", `
cases:
  - {id: wrong, turns: ["What is the beam current?"], expect: {route: {plans: 2}}}
`)
	r := h.run("", "eval", "wrong.yaml")
	if r.code != cli.ExitEvalFailed {
		t.Fatalf("a failed expectation: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "eval", r.stdout, "wrong (run 1):\n  expect.route.plans: want 2, seen 1", "FAIL: 1 cases")

	// A threshold the file allows: the same failure passes at 0.
	h.writeConfig("lenient.yaml", "thresholds: {pass_rate: 0}\n"+`
cases:
  - {id: wrong, turns: ["What is the beam current?"], expect: {route: {plans: 2}}}
`)
	if r := h.run("", "eval", "lenient.yaml"); r.code != cli.ExitOK {
		t.Fatalf("below no threshold: exit %d\n%s", r.code, r.stdout)
	}

	for name, tc := range map[string]struct{ file, want string }{
		"bad file":        {"cases:\n  - id: x\n    turns: [hi]\n    expext: {}\n", `bad.yaml:2: case "x": unknown field "expext"`},
		"unknown fault":   {"cases:\n  - {id: x, turns: [hi], inject: [{capability: channel_raed, fault: critical}]}\n", `no capability "channel_raed" is registered`},
		"rubric no judge": {"cases:\n  - {id: x, turns: [hi], expect: {answer: {rubric: polite}}}\n", "no judge model is configured"},
	} {
		t.Run(name, func(t *testing.T) {
			h.writeConfig("bad.yaml", tc.file)
			r := h.run("", "eval", "bad.yaml")
			if r.code != cli.ExitEvalError || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Fatalf("exit %d, want 2 naming %q\nstdout:\n%s\nstderr:\n%s", r.code, tc.want, r.stdout, r.stderr)
			}
		})
	}
	if r := h.run("", "eval"); r.code != cli.ExitUsage || !strings.Contains(r.stderr, "one case file is required") {
		t.Fatalf("no file: exit %d: %s", r.code, r.stderr)
	}
	if r := h.run("", "eval", "missing.yaml"); r.code != cli.ExitEvalError || !strings.Contains(r.stderr, "missing.yaml") {
		t.Fatalf("missing file: exit %d: %s", r.code, r.stderr)
	}
}

// On a terminal a progress bar counts the runs on stderr.
func TestEvalProgressOnTerminal(t *testing.T) {
	h := controlRoom(t)
	h.term = true
	h.writeConfig("cases.yaml", evalCases)
	r := h.run("", "eval", "cases.yaml", "--repeats", "2", "--concurrency", "1")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "progress", r.stderr, "[############............] 2/4", "[########################] 4/4 ✓")
	mustContain(t, "eval", r.stdout, "current  pass    2/2")
}

// --compare runs the cases under a second configuration (here a scripted
// response model) and prints what differs per case.
func TestEvalCompare(t *testing.T) {
	srv := openaitest.New(t).On(nil, openaitest.Text("The beam current is 500.2 mA (SR:DCCT:CURRENT)."))
	h := controlRoom(t)
	h.env["OPENAI_API_KEY"] = "test"
	h.writeConfig("cases.yaml", evalCases)
	h.writeConfig("model.yaml", "models:\n  response:\n    provider: openai\n    model: scripted-1\n    base_url: "+srv.BaseURL()+"\n")
	r := h.run("", "eval", "cases.yaml", "--compare", "model.yaml", "--tags", "read")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "compare", r.stdout, "A: built-in defaults (offline)", "B: "+filepath.Join(h.dir, "model.yaml")+" (openai/scripted-1 at "+srv.BaseURL()+")",
		`current  answer`, `"The beam current is 500.2 mA (SR:DCCT:CURRENT)."`, "current  calls   0", "1 of 1 cases differ.")
	if strings.Contains(r.stdout, "flaky") {
		t.Errorf("--tags read ran the fault case:\n%s", r.stdout)
	}
	// The judge may not be a model under test.
	h.writeConfig("judge.yaml", "models:\n  default:\n    provider: openai\n    model: scripted-1\n    base_url: "+srv.BaseURL()+"\n")
	r = h.run("", "--config", "model.yaml", "eval", "cases.yaml", "--judge", "judge.yaml")
	if r.code != cli.ExitEvalError || !strings.Contains(r.stderr, "the judge model is a model under test") {
		t.Fatalf("judge under test: exit %d: %s", r.code, r.stderr)
	}
}

// --record keeps each run's summary in the store; --history lists them,
// newest first.
func TestEvalRecordAndHistory(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("cases.yaml", evalCases)
	h.writeConfig("wrong.yaml", "name: room\ncases:\n  - {id: wrong, turns: [\"What is the beam current?\"], expect: {route: {plans: 2}}}\n")
	store := "sqlite:" + filepath.Join(h.dir, "evals.db")
	if r := h.run("", "--store", store, "eval", "cases.yaml", "--record"); r.code != cli.ExitOK || !strings.Contains(r.stderr, "recorded in the store") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if r := h.run("", "--store", store, "eval", "wrong.yaml", "--record"); r.code != cli.ExitEvalFailed {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	r := h.run("", "--store", store, "eval", "--history", "5")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "room   FAIL") || !strings.HasSuffix(lines[1], "wrong") || !strings.Contains(lines[2], "room   PASS") {
		t.Fatalf("history:\n%s", r.stdout)
	}
	if r := h.run("", "--store", "memory", "eval", "--history", "5"); r.code != cli.ExitOK || !strings.Contains(r.stdout, "No evaluation runs are recorded.") {
		t.Fatalf("empty history: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
}

// --server evaluates a running server through its native API: the same
// expectations, read from the server's event stream and the thread's state.
func TestEvalAgainstServer(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- h.app.Run(ctx, h.environment(strings.NewReader(""), &stdout, &stderr, []string{"--store", "memory", "serve", "--addr", "127.0.0.1:0"}))
	}()
	defer func() {
		cancel()
		<-done
	}()
	var base string
	for deadline := time.Now().Add(30 * time.Second); base == ""; {
		if m := pageLine.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no banner: %q %q", stdout.String(), stderr.String())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	h.writeConfig("server.yaml", `
name: remote
cases:
  - id: current
    turns: ["What is the beam current?"]
    expect:
      trajectory: {planned: {exact: [channel_finding, channel_read]}, executed: {exact: [channel_finding, channel_read]}}
      route: {status: answered, message: answer, plans: 1, retries: 0}
      safety: {no_side_effects_planned: true, no_side_effects_run: true}
      answer: {contains: [SR:DCCT:CURRENT], number: {value: 500.2, unit: mA, tolerance: 0.5}}
  - id: write
    turns:
      - say: "Set the quadrupole Q1 current in the BTS line to 105 A"
        expect:
          route: {status: interrupted}
          safety: {approval: {capability: channel_write, changes: [{target: "BTS:MAG:Q1:CURRENT", value: 105, unit: A}]}}
      - "yes"
    expect:
      route: {status: answered, message: answer}
      answer: {contains: [readback verified]}
`)
	r := h.run("", "eval", "server.yaml", "--server", base)
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "eval", r.stdout, "current  pass", "write    pass", "PASS: 2 cases")

	// What only an agent in this process can do is refused, by name.
	h.writeConfig("inproc.yaml", `
cases:
  - {id: inject, turns: ["What is the beam current?"], inject: [{capability: channel_read, fault: critical}]}
  - {id: failures, turns: ["What is the beam current?"], expect: {route: {failures: []}}}
`)
	r = h.run("", "eval", "inproc.yaml", "--server", base)
	if r.code != cli.ExitEvalError {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	mustContain(t, "eval", r.stdout, "error: inject needs the application in this process", "error: expect.route.failures: a server's event stream carries no failure events")
	if r := h.run("", "eval", "inproc.yaml", "--server", base, "--compare", "x.yaml"); r.code != cli.ExitUsage {
		t.Fatalf("--server with --compare: exit %d", r.code)
	}
}

func TestEvalTagsMatchingNothing(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("cases.yaml", evalCases)
	if r := h.run("", "eval", "cases.yaml", "--tags", "nope"); r.code != cli.ExitEvalError || !strings.Contains(r.stderr, "no case of cases.yaml has the tags nope") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}
