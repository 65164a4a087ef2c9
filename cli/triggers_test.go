package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/trigger"
)

// serve mounts the configured triggers at POST /api/triggers/{name}, with
// API keys configured: a signed call gets 202 and a run id without a key;
// an unsigned one 401; the run is the server's, its owner's (principal:
// ops): the ops key streams it over the native API to its answer.
func TestServeMountsTriggers(t *testing.T) {
	h := controlRoom(t)
	h.env["BEAM_ALARM_SECRET"] = "0123456789abcdef-alarm"
	h.env["CAPGRAPH_API_KEYS"] = "ops=0123456789abcdef-ops"
	h.writeConfig("capgraph.yaml", `store: memory
triggers:
  beam_alarm:
    secret_env: BEAM_ALARM_SECRET
    input: "Alarm {{.alarm}}: what is the beam current?"
    allowed_capabilities: [channel_finding, channel_read]
    principal: ops
`)
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
	post := func(body string, sign bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/api/triggers/beam_alarm", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if sign {
			now := time.Now()
			req.Header.Set(trigger.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
			req.Header.Set(trigger.HeaderSignature, trigger.Sign([]byte(h.env["BEAM_ALARM_SECRET"]), now, []byte(body)))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, out := post(`{"alarm": "BEAM_LOSS"}`, false); code != http.StatusUnauthorized {
		t.Fatalf("unsigned: %d %s", code, out)
	}
	code, out := post(`{"alarm": "BEAM_LOSS"}`, true)
	var acc trigger.Accepted
	if code != http.StatusAccepted || json.Unmarshal([]byte(out), &acc) != nil || acc.RunID == "" {
		t.Fatalf("signed: %d %s", code, out)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/threads/"+acc.Thread+"/runs/"+acc.RunID+"/events", nil)
	req.Header.Set("Authorization", "Bearer 0123456789abcdef-ops")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(events), "event: run_start") ||
		!strings.Contains(string(events), `"status":"answered"`) {
		t.Fatalf("the trigger's run streamed to its owner: %d %s", resp.StatusCode, events)
	}
	stopped = true
	if code := sv.stop(); code != cli.ExitOK {
		t.Fatalf("serve exited %d: %s", code, sv.errb.String())
	}
}
