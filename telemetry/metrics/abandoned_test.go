package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/telemetry/metrics"
)

// A capability that ignores its context past its deadline is abandoned,
// and counted: capgraph_capability_abandoned_total by capability.
func TestAbandonedCapabilityIsCounted(t *testing.T) {
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int32
	c := capabilities.Define(capabilities.Definition{
		Name: "stuck_read", Description: "Read a value from a driver that can get stuck", Provides: []string{"VALUE"},
		Deadline: 50 * time.Millisecond,
		Retry:    capabilities.RetryPolicy{MaxAttempts: 2, InitialInterval: time.Millisecond, Jitter: capabilities.JitterNone},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			if calls.Add(1) == 1 {
				<-release // stuck, deaf to its context
			}
			return capabilities.Result("VALUE", 1.0, "value is 1"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: memory.New(), Observer: m})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	for _, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t", Input: "read the stuck value"}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), `capgraph_capability_abandoned_total{capability="stuck_read"} 1`) {
		t.Fatalf("scrape lacks the abandoned attempt:\n%s", body)
	}
}
