package telemetry_test

import (
	"fmt"
	"io"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/logging/logrusadapter"
	"github.com/capgraph/capgraph/telemetry"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/metrics"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

// BenchmarkTurnObserved measures what observing costs a turn (the answered
// turn of teletest: real nodes, scripted model, memory store): none, spans
// (batched to an exporter that keeps nothing), metrics, log lines at info
// (discarded), and all three.
func BenchmarkTurnObserved(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(b.Context()) //nolint:errcheck
	logger, err := logrusadapter.New(logrusadapter.Config{Format: logrusadapter.FormatJSON, Output: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	m := metrics.New(metrics.Options{})
	for _, c := range []struct {
		name string
		obs  agent.Observer
	}{
		{"none", nil},
		{"traces", tracing.New(tp)},
		{"metrics", m},
		{"logs", telemetry.Logs(logger)},
		{"all", telemetry.Join(tracing.New(tp), m, telemetry.Logs(logger))},
	} {
		b.Run(c.name, func(b *testing.B) {
			a, _ := teletest.Agent(b, memory.New(), c.obs, false)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				teletest.Turn(b, a, fmt.Sprintf("t%d", i), teletest.Answered)
				i++
			}
		})
	}
}
