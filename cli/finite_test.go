package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
)

// Numbers that are not numbers (issue 26, part 7) on the command line, as
// a user meets them: a value in their words that is not a number
// ("1e400", "NaN", "inf") never reaches the machine, and an action a
// careless capability computes as +Inf is refused before anyone is asked,
// with a report and an audit record; the command exits cleanly, and serve
// answers 200.

// With writes on, a request to set Q1 to a value that is not a number
// exits 0 without asking anyone or writing anything.
func TestRunNonFiniteWordsExitCleanly(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	for _, v := range []string{"1e400", "-1e400", "NaN", "inf"} {
		r := h.run("", "run", "Set the quadrupole Q1 current in the BTS line to "+v+" A")
		if r.code != cli.ExitOK {
			t.Fatalf("%s: exit %d: %s %s", v, r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "Approval needed") || strings.Contains(r.stdout, "readback verified") || strings.Contains(r.stderr, "unsupported value") {
			t.Fatalf("%s:\n%s\n%s", v, r.stdout, r.stderr)
		}
	}
	// Nothing was attempted: no record is an approval or a write.
	r := h.run("", "audit", "--json")
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(line, "{") && !strings.Contains(line, `"event":"refused"`) && !strings.Contains(line, `"event":"unrequested"`) {
			t.Errorf("audit record of an attempt: %s", line)
		}
	}
}

// rampRoomApp is the test room whose channel_write also sets the time its
// ramp takes — the step divided by a ramp rate nobody configured (0):
// +Inf. It checks nothing; the framework refuses.
func rampRoomApp() cli.App {
	r := newRoom(0)
	return cli.App{
		Summary: "a test control room with a careless ramp",
		Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
			caps, err := r.capabilities()
			if err != nil {
				return nil, err
			}
			rate := 0.0
			write := capabilities.Define(capabilities.Definition{
				Name:        "channel_write",
				Description: "Write a new setpoint to a control-system channel, ramping it: set, change or adjust a setting to a number the user gives.",
				Provides:    []string{"CHANNEL_WRITE_RESULTS"}, Requires: []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES", Cardinality: capabilities.Multiple}},
				SideEffects: true,
				ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Select when the user asks to set, change or adjust a setting to a value.",
					Examples: []capabilities.ClassifierExample{{Query: "Set the quadrupole Q1 current in the BTS line to 105 A", Result: true, Reason: "a write"}}},
				Action: func(st capabilities.Step) (capabilities.Action, error) {
					w, err := r.planWrite(st)
					if err != nil {
						return capabilities.Action{}, err
					}
					return capabilities.Action{Summary: "set " + w.text(), Changes: []capabilities.Change{
						{Target: w.c.name, Value: w.target, Unit: w.c.units},
						{Target: w.c.name + ":RAMP_TIME", Value: (w.target - w.old) / rate, Unit: "s"}}}, nil
				},
				Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
					panic("channel_write ran")
				},
			})
			return append(caps[:3:3], write), nil
		},
	}
}

// A careless capability's +Inf is refused before anyone is asked: the
// command exits 1 (not answered) with the report, capgraph audit shows the
// refusal, and serve answers it over /v1 and the native API with 200.
func TestRunNonFiniteActionIsRefusedAndAudited(t *testing.T) {
	h := newHarness(t, rampRoomApp())
	h.writeConfig("capgraph.yaml", "control_system:\n  writes_enabled: true\n")
	r := h.run("", "run", "--thread", "ramp", setQ1)
	if r.code != cli.ExitNotAnswered {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "run", r.stdout, "Your request could not be completed",
		"The value for BTS:MAG:Q1:CURRENT:RAMP_TIME is +Inf, which is not a finite number, so nobody was asked and nothing was changed")
	if strings.Contains(r.stdout, "Approval needed") {
		t.Fatalf("a human was asked:\n%s", r.stdout)
	}
	r = h.run("", "audit", "--thread", "ramp")
	mustContain(t, "audit", r.stdout, "refused", "channel_write", "not_finite")

	sv := startServe(h, h.app, "--addr", "127.0.0.1:0")
	stopped := false
	defer func() {
		if !stopped {
			sv.stop()
		}
	}()
	sv.waitFor(t, &sv.out, "web page:", "serve did not start")
	m := pageLine.FindStringSubmatch(sv.out.String())
	if m == nil {
		t.Fatalf("no web page line: %s", sv.out.String())
	}
	base := m[1]
	client := &http.Client{Timeout: time.Minute}
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := client.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/v1/chat/completions", `{"model":"capgraph","messages":[{"role":"user","content":"`+setQ1+`"}]}`)
	var chat struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &chat) != nil || len(chat.Choices) != 1 ||
		!strings.Contains(chat.Choices[0].Message.Content, "RAMP_TIME is +Inf, which is not a finite number") {
		t.Fatalf("/v1/chat/completions: %d %s", code, body)
	}
	if code, body := post("/api/threads", `{"id":"ramp2"}`); code != http.StatusCreated {
		t.Fatalf("create thread: %d %s", code, body)
	}
	code, body = post("/api/threads/ramp2/runs", `{"input":"`+setQ1+`","stream":true}`)
	if code != http.StatusOK || !strings.Contains(body, "not a finite number") || !strings.Contains(body, `"status":"answered"`) {
		t.Fatalf("native run: %d %s", code, body)
	}
	if code, body := post("/v1/chat/completions", `{"model":"capgraph","temperature":NaN,"messages":[]}`); code != http.StatusBadRequest {
		t.Fatalf("NaN in the body: %d %s", code, body)
	}
	stopped = true
	if c := sv.stop(); c != cli.ExitOK {
		t.Fatalf("serve exit %d: %s", c, sv.errb.String())
	}
	r = h.run("", "audit")
	if n := strings.Count(r.stdout, "not_finite"); n != 3 {
		t.Fatalf("%d refusals audited, want 3 (run, /v1, native):\n%s", n, r.stdout)
	}
}
