package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/native"
)

// checkIDs checks that frames carrying events have ids first, first+1, …,
// each equal to the event's seq and naming run.
func checkIDs(t *testing.T, frames []sseFrame, first int, run string) int {
	t.Helper()
	want := first
	for _, f := range frames {
		if f.ID == "" {
			continue // heartbeat, error, end
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
			t.Fatal(err)
		}
		if f.ID != strconv.Itoa(want) || ev.Seq != want || ev.RunID != run {
			t.Fatalf("frame id %s seq %d run %s, want id %d of %s", f.ID, ev.Seq, ev.RunID, want, run)
		}
		want++
	}
	return want - 1
}

// The agent numbers the events of every Run and Resume from 1; the native
// API numbers each server run's events itself, so a run resuming an
// approval has ids 1, 2, … of its own, and reconnecting to it with
// Last-Event-ID gets exactly the events after that id.
func TestEventIDsAcrossApprovalResume(t *testing.T) {
	env := newRealAgentEnv(t)
	env.do(t, "POST", "/api/threads", keyAlice, map[string]any{"id": "snap"})
	start := func(path string, body map[string]any) (run, events string) {
		t.Helper()
		resp, b := env.do(t, "POST", path, keyAlice, body)
		var out struct {
			Run       native.RunInfo `json:"run"`
			EventsURL string         `json:"events_url"`
		}
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &out) != nil {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		return out.Run.ID, out.EventsURL
	}
	run1, url1 := start("/api/threads/snap/runs", map[string]any{"input": "Save a snapshot of the settings"})
	_, b := env.do(t, "GET", url1, keyAlice, nil)
	frames := readSSE(t, strings.NewReader(string(b)))
	last1 := checkIDs(t, frames, 1, run1)
	var apID string
	for _, f := range frames {
		if f.Event == string(agent.EventApprovalRequired) {
			var ev agent.Event
			_ = json.Unmarshal([]byte(f.Data), &ev)
			apID = ev.Approval.ID
		}
	}
	if apID == "" || last1 < 3 {
		t.Fatalf("no approval in %s", b)
	}

	run2, url2 := start("/api/threads/snap/approval", map[string]any{"approval_id": apID, "approved": true})
	if run2 == run1 {
		t.Fatal("the resume reused the run id")
	}
	_, b = env.do(t, "GET", url2, keyAlice, nil)
	all := readSSE(t, strings.NewReader(string(b)))
	last2 := checkIDs(t, all, 1, run2)
	if last2 < 4 || !strings.Contains(string(b), "snap-7") {
		t.Fatalf("resumed run: %s", b)
	}
	// Reconnect in the middle of the resumed run, by header and by query.
	for _, hdr := range [][]string{{"Last-Event-ID", "3"}, nil} {
		path := url2
		if hdr == nil {
			path += "?after=3"
		}
		_, b = env.do(t, "GET", path, keyAlice, nil, hdr...)
		got := readSSE(t, strings.NewReader(string(b)))
		if end := checkIDs(t, got, 4, run2); end != last2 || got[len(got)-1].Event != "end" || !strings.Contains(string(b), `"status":"answered"`) {
			t.Fatalf("reconnect after 3 (%v): events up to %d of %d: %s", hdr, end, last2, b)
		}
	}
	// The first run's events are still there under its own ids.
	_, b = env.do(t, "GET", url1, keyAlice, nil, "Last-Event-ID", strconv.Itoa(last1-1))
	if got := readSSE(t, strings.NewReader(string(b))); checkIDs(t, got, last1, run1) != last1 {
		t.Fatalf("first run after reconnect: %s", b)
	}
}
