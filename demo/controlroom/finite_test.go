package controlroom_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/state"
)

// Numbers that are not numbers (issue 26, part 7) in the shipped demo.

// "Set Q1 to 1e400 A", as a user types it: the command exits 0 and serve
// answers 200 on /v1 and the native API; nobody is asked, nothing is
// written, and any audit record is a refusal.
func TestDemoSetQ1ToNonFiniteValue(t *testing.T) {
	const ask = "Set the quadrupole Q1 current in the BTS line to 1e400 A"
	h := controlRoom(t)
	cfg := h.writeConfig("writes.yaml", "control_system:\n  writes_enabled: true\n")
	r := h.run("", "--config", cfg, "run", ask)
	if r.code != cli.ExitOK || strings.Contains(r.stdout, "Approval needed") || strings.Contains(r.stdout, "readback") {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range strings.Split(h.run("", "--config", cfg, "audit", "--json").stdout, "\n") {
		if strings.HasPrefix(line, "{") && !strings.Contains(line, `"event":"refused"`) {
			t.Errorf("audit record of an attempt: %s", line)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb strings.Builder
	started := make(chan string, 1)
	done := make(chan int, 1)
	term := false
	go func() {
		done <- h.app.Run(ctx, cli.Env{Args: []string{"--config", cfg, "serve", "--addr", "127.0.0.1:0"}, Stdin: strings.NewReader(""),
			Stdout: writerFunc(func(p []byte) (int, error) {
				out.Write(p)
				if i := strings.Index(out.String(), "web page:"); i >= 0 {
					if f := strings.Fields(out.String()[i+len("web page:"):]); len(f) > 0 {
						select {
						case started <- strings.TrimSuffix(f[0], "/"):
						default:
						}
					}
				}
				return len(p), nil
			}), Stderr: &errb, Dir: h.dir, Terminal: &term, Getenv: func(k string) string { return h.env[k] }})
	}()
	var base string
	select {
	case base = <-started:
	case code := <-done:
		t.Fatalf("serve exited %d: %s", code, errb.String())
	}
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post("/v1/chat/completions", `{"model":"capgraph","messages":[{"role":"user","content":"`+ask+`"}]}`)
	var chat struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &chat) != nil || len(chat.Choices) != 1 || strings.Contains(body, "Approval ID") {
		t.Fatalf("/v1/chat/completions: %d %s", code, body)
	}
	if code, body := post("/api/threads", `{"id":"nf"}`); code != http.StatusCreated {
		t.Fatalf("create thread: %d %s", code, body)
	}
	code, body = post("/api/threads/nf/runs", `{"input":"`+ask+`","stream":true}`)
	if code != http.StatusOK || !strings.Contains(body, `"status":"answered"`) || strings.Contains(body, "approval_required") {
		t.Fatalf("native run: %d %s", code, body)
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A model that plans the write with a value JSON cannot hold (1e400) is
// told so and corrected; one that writes "to 1e400 A" into the step's
// objective, which channel_write reads as +Inf, is refused where the step
// executes as not the value the user asked for (+Inf is no value, not
// 105 A) before anyone is asked, and the refusal is audited with the value
// as text.
func TestDemoModelNonFiniteWrite(t *testing.T) {
	task := `{"task": "Set the BTS Q1 quadrupole current to 105 A", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "BTS Q1 quadrupole", "value": 105, "unit": "A"}]}}`
	a, m, p, _ := scriptedWorld(t, task, plan(writePlanTemplate, "1e400"), plan(writePlanTemplate, "105"))
	o := runOn(t, a, "t", "Set the BTS Q1 quadrupole current to 105 A")
	if ap := o.of(agent.EventApprovalRequired); len(ap) != 1 || !strings.Contains(ap[0].Approval.Summary, "→ 105.00 A") {
		t.Fatalf("approval %+v; message %+v", ap, o.message())
	}
	if calls := m.CallsFor(llm.RoleOrchestrator); len(calls) != 2 || !strings.Contains(calls[1].Prompt(), "holds the number 1e400, beyond the range of a 64-bit float") {
		t.Errorf("the model was not told what is wrong with 1e400")
	}
	untouched(t, p)

	inObjective := strings.Replace(plan(writePlanTemplate, "1e400"), `"parameters": {"value": 1e400}, `, "", 1)
	a, _, p, _ = scriptedWorld(t, task, inObjective)
	o = runOn(t, a, "u", "Set the BTS Q1 quadrupole current to 105 A")
	if msg := o.message(); msg == nil || msg.Kind != state.KindErrorReport || !strings.Contains(msg.Content, `would be set to "+Inf", the user asked for 105 A`) {
		t.Fatalf("message %+v", msg)
	}
	if len(o.of(agent.EventApprovalRequired)) != 0 {
		t.Error("a human was asked to approve +Inf A")
	}
	recs, err := a.Audit(context.Background(), agent.AuditFilter{Thread: "u", Event: agent.AuditRefused})
	if err != nil || len(recs) != 1 || recs[0].Event != agent.AuditRefused || recs[0].Reason != agent.RefusedIntentMismatch ||
		len(recs[0].Changes) != 1 || recs[0].Changes[0].Value != "+Inf" {
		t.Fatalf("audit %+v, %v; want one refusal (intent_mismatch) naming +Inf", recs, err)
	}
	untouched(t, p)
}

// A value stated without a unit is the device's own number: a task model
// that reads "610" as 610 V cannot make 0.61 kV the user's value (its unit
// is not taken), so a plan writing 0.61 kV to the cavity, whose unit is
// kV, is refused and the model told; the plan writing 610 reaches the card.
func TestModelUnitDoesNotScaleAUnitlessValue(t *testing.T) {
	task := `{"task": "Set the RF cavity 2 voltage to 610 V", "depends_on_chat_history": false, "intent": {"kind": "change", "changes": [{"target": "RF cavity 2 voltage", "value": 610, "unit": "V"}]}}`
	cavPlan := "```json\n" + `{"steps": [
 {"context_key": "cav", "capability": "channel_finding", "task_objective": "Find the RF cavity 2 voltage channel", "expected_output": "CHANNEL_ADDRESSES", "parameters": {"query": "RF cavity 2 voltage"}},
 {"context_key": "cav_write", "capability": "channel_write", "task_objective": "Set SR:RF:CAV2:VOLT to %s kV", "expected_output": "CHANNEL_WRITE_RESULTS", "parameters": {"value": %s}, "inputs": [{"CHANNEL_ADDRESSES": "cav"}]},
 {"context_key": "answer", "capability": "respond", "task_objective": "Report the new setpoint"}]}` + "\n```"
	a, m, p, _ := scriptedWorld(t, task, plan(cavPlan, "0.61"), plan(cavPlan, "610"))
	o := runOn(t, a, "t", "Set the RF cavity 2 voltage to 610")
	ap := o.of(agent.EventApprovalRequired)
	if len(ap) != 1 || !strings.Contains(ap[0].Approval.Summary, "SR:RF:CAV2:VOLT") || !strings.Contains(ap[0].Approval.Summary, "610") ||
		strings.Contains(ap[0].Approval.Summary, "0.61") {
		t.Fatalf("approval %+v; message %+v", ap, o.message())
	}
	if calls := m.CallsFor(llm.RoleOrchestrator); len(calls) != 2 {
		t.Errorf("%d plans, want the 0.61 kV plan refused and a second", len(calls))
	}
	untouched(t, p)
}
