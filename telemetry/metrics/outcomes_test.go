package metrics_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/internal/outcometest"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/telemetry/metrics"
)

var approvalID = regexp.MustCompile(`Approval ID: (\S+)`)

// chatTurn sends a conversation over Chat Completions and returns the answer.
func chatTurn(t *testing.T, url string, msgs ...map[string]string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": server.DefaultModel, "messages": msgs})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) != 1 {
		t.Fatalf("%d %v %+v", resp.StatusCode, err, out)
	}
	return out.Choices[0].Message.Content
}

// Real turns through the server, one per outcome a change can have (the
// outcome plant, internal/outcometest, and its lying planner), then a scrape: each outcome is
// counted once under capgraph_side_effects_total.
func TestSideEffectOutcomesAfterRealTurns(t *testing.T) {
	m := metrics.New(metrics.Options{})
	p := outcometest.New()
	caps, err := p.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	reg := capabilities.NewRegistry()
	for _, c := range caps {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	// The planner plans each change as asked, and a write for a read.
	a, err := agent.New(agent.Config{Registry: reg, Store: memory.New(), Observer: m, Models: outcometest.Planner(),
		Options: state.Options{WritesEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Runner: a, Metrics: m.Handler(), ObserveRequest: m.ObserveRequest})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	user := func(s string) map[string]string { return map[string]string{"role": "user", "content": s} }
	for _, magnet := range []string{"Q1", "Q2", "Q3", "Q4"} {
		ask := "Set the " + magnet + " current to 105 A"
		q := chatTurn(t, ts.URL, user(ask))
		id := approvalID.FindStringSubmatch(q)
		if id == nil {
			t.Fatalf("%s: no approval asked: %s", magnet, q)
		}
		chatTurn(t, ts.URL, user(ask), map[string]string{"role": "assistant", "content": q}, user("yes "+id[1]))
	}
	chatTurn(t, ts.URL, user("Set the Q1 current to 150 A")) // refused by the limits
	chatTurn(t, ts.URL, user(outcometest.Read))              // a write nobody asked for: unrequested
	fams := scrape(t, ts.URL, "")
	for _, o := range []string{"confirmed", "failed", "mismatch", "unconfirmed", "refused", "unrequested"} {
		if v := value(fams, "capgraph_side_effects_total", "capability="+outcometest.Capability+",outcome="+o); v != 1 {
			t.Errorf("capgraph_side_effects_total{outcome=%q} = %v, want 1", o, v)
		}
	}
	// Every attempt that was called started once: four approved changes.
	if v := value(fams, "capgraph_side_effect_events_total", "capability="+outcometest.Capability+",event=started"); v != 4 {
		t.Errorf("started events %v, want 4", v)
	}
}
