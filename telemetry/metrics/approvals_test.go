package metrics_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/metrics"
)

// A mixed load — answers, retries, a replan, error reports, refused writes,
// approvals answered yes and no and left waiting — and the counts a scrape
// shows for approvals and side effects. With CAPGRAPH_METRICS_SAMPLE set
// the scrape is written there: it is what docs/img/grafana-dashboard.png
// shows (docs/grafana/picture.py).
func TestApprovalsAndSideEffectsOfAMixedLoad(t *testing.T) {
	m := metrics.New(metrics.Options{Providers: map[string]string{"task_extraction": "openai", "classifier": "openai", "orchestrator": "openai", "response": "openai"}})
	a, _ := teletest.Agent(t, memory.New(), m, true)
	srv, err := server.New(server.Config{Runner: a, Metrics: m.Handler(), ObserveRequest: m.ObserveRequest})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	mix := []string{teletest.Answered, teletest.Answered, teletest.Retried, teletest.Answered, teletest.Replanned, teletest.ErrorReport, teletest.Answered, teletest.Retried}
	for i := range 40 {
		w := mix[i%len(mix)]
		chat(t, ts.URL, "", fmt.Sprintf("%s (%d)", teletest.Inputs[w], i))
	}
	// Six writes ask for approval (the same approval id on each thread):
	// three approved, one rejected, two left waiting.
	for i := range 6 {
		th := fmt.Sprintf("ap-%d", i)
		teletest.Turn(t, a, th, teletest.Approval)
		if i < 4 {
			yes := i != 2
			for _, err := range a.Resume(context.Background(), th, agent.Answer{Approved: &yes}) {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	off, _ := teletest.Agent(t, memory.New(), m, false)
	for i := range 3 {
		teletest.Turn(t, off, fmt.Sprintf("w-%d", i), teletest.RefusedWrite)
	}
	fams := scrape(t, ts.URL, "")
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"capgraph_approvals_requested_total", "kind=step", 6},
		{"capgraph_approvals_pending", "", 2},
		{"capgraph_approval_wait_seconds", "decision=approved,kind=step", 3},
		{"capgraph_approval_wait_seconds", "decision=rejected,kind=step", 1},
		{"capgraph_side_effects_total", "capability=set_current,outcome=confirmed", 3},
		{"capgraph_side_effects_total", "capability=set_current,outcome=refused", 3},
		{"capgraph_runs_total", "outcome=interrupted", 6},
		{"capgraph_runs_total", "outcome=rejected", 1},
		{"capgraph_failures_total", "recovery=replan,severity=replanning", 1},
	} {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if out := os.Getenv("CAPGRAPH_METRICS_SAMPLE"); out != "" {
		resp, err := ts.Client().Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.ReadFrom(resp.Body); err != nil {
			t.Fatal(err)
		}
	}
}
