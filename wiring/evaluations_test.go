package wiring_test

import (
	"context"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/wiring"
)

// The server `serve` builds lists the evaluation runs recorded in its store
// (GET /api/evaluations, the page's list).
func TestServerListsRecordedEvaluations(t *testing.T) {
	cfg, err := config.Parse([]byte("store: memory\n"), "capgraph.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := wiring.New(cfg, wiring.App{Name: "beamline", Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return nil, nil }}, wiring.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	st, err := rt.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &eval.Report{Suite: "beamline", Started: time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC), Passed: true}
	if err := eval.Record(ctx, st.(checkpoint.RecordLog), r); err != nil {
		t.Fatal(err)
	}
	sc, err := rt.ServerConfig(ctx, logging.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if sc.Evaluations == nil {
		t.Fatal("no evaluation lister")
	}
	runs, err := sc.Evaluations.RecentEvaluations(ctx, 5)
	if err != nil || len(runs) != 1 || runs[0].(eval.Summary).Suite != "beamline" {
		t.Fatalf("runs %+v (err %v)", runs, err)
	}
}
