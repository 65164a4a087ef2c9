package eval

import (
	"strings"
	"testing"
)

// The native API's stream: agent events, heartbeats, the error frame of a
// failed run and the end frame with its status.
func TestReadStream(t *testing.T) {
	stream := `id: 1
event: run_start
data: {"type":"run_start","thread":"t","seq":1}

event: heartbeat
data: {}

id: 2
event: plan
data: {"type":"plan","seq":2,"plan":{"number":1,"steps":[{"capability":"channel_read","context_key":"k","task_objective":"o","status":"pending"},{"capability":"respond","context_key":"r","task_objective":"o","status":"pending"}]}}

id: 3
event: retry
data: {"type":"retry","seq":3}

event: error
data: {"error":{"message":"interlock tripped","type":"server_error"}}

event: end
data: {"run_id":"run-1","status":"failed","shutdown":false}
`
	tr := &Trace{}
	if err := readStream(strings.NewReader(stream), tr); err != nil {
		t.Fatal(err)
	}
	if tr.Status != "failed" || tr.Fatal != "interlock tripped" || tr.Retries != 1 || len(tr.Plans) != 1 || strings.Join(tr.Plan(), ",") != "channel_read" {
		t.Fatalf("trace %+v", tr)
	}
	if err := readStream(strings.NewReader("event: plan\ndata: {\"type\":\"plan\"}\n\n"), &Trace{}); err == nil || !strings.Contains(err.Error(), "without its end frame") {
		t.Fatalf("a cut stream: %v", err)
	}
	if err := readStream(strings.NewReader("event: plan\ndata: {oops\n\n"), &Trace{}); err == nil || !strings.Contains(err.Error(), "plan event") {
		t.Fatalf("a bad event: %v", err)
	}
}
