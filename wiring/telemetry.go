package wiring

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/telemetry"
	"github.com/capgraph/capgraph/telemetry/metrics"
	"github.com/capgraph/capgraph/telemetry/otlp"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

// Telemetry is what the file's telemetry section (and Options.LogRuns)
// turn on: the agent's observer and the metrics.
type Telemetry struct {
	// Observer observes the agent's runs; nil when nothing does.
	Observer agent.Observer
	// Metrics is set when telemetry.metrics.enabled.
	Metrics *metrics.Metrics
	// MetricsListen is telemetry.metrics.listen (empty: the metrics are
	// served by the server, at /metrics).
	MetricsListen string
	// Tracing is true when traces are exported.
	Tracing bool
}

// shutdownGrace bounds the flush of queued spans when the runtime closes.
const shutdownGrace = 5 * time.Second

// Telemetry builds the runs' observers once: traces exported over OTLP
// (telemetry.traces, OTEL_*), Prometheus metrics (telemetry.metrics) and,
// with Options.LogRuns, a log line per significant event through
// Options.Logger. The tracer provider is flushed and shut down with the
// runtime.
func (r *Runtime) Telemetry(ctx context.Context) (*Telemetry, error) {
	if r.telemetry != nil {
		return r.telemetry, nil
	}
	t := &Telemetry{}
	var obs []agent.Observer
	tc := r.cfg.Telemetry
	if otlp.Enabled(tc.Traces.Exporter, r.opts.Getenv) {
		tp, err := otlp.New(ctx, otlp.Config{Protocol: tc.Traces.Protocol, Endpoint: tc.Traces.Endpoint, Insecure: tc.Traces.Insecure,
			ServiceName: tc.Traces.ServiceName, DefaultService: r.app.Name, SampleRatio: tc.Traces.SampleRatio, Getenv: r.opts.Getenv})
		if err != nil {
			return nil, &config.Error{File: r.cfg.Source(), Problems: []config.Problem{{Line: r.cfg.Line("telemetry.traces"), Key: "telemetry.traces",
				Problem: "cannot set up the trace exporter: " + err.Error()}}}
		}
		r.closers = append(r.closers, func() error {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			return tp.Shutdown(sctx)
		})
		obs = append(obs, tracing.New(tp))
		t.Tracing = true
	}
	if tc.Metrics.Enabled {
		providers := map[string]string{}
		for _, role := range llm.Roles() {
			if m, ok := r.cfg.ModelFor(string(role)); ok {
				providers[string(role)] = m.Provider
			}
		}
		t.Metrics = metrics.New(metrics.Options{Providers: providers})
		t.MetricsListen = tc.Metrics.Listen
		obs = append(obs, t.Metrics)
	}
	if r.opts.LogRuns && r.opts.Logger != nil {
		obs = append(obs, telemetry.Logs(r.opts.Logger))
	}
	t.Observer = telemetry.Join(obs...)
	r.telemetry = t
	return t, nil
}

// ServeMetrics serves the metrics at /metrics on telemetry.metrics.listen
// until ctx is done, and returns the address it listens on; "" when the
// file asks for no listener of its own.
func (r *Runtime) ServeMetrics(ctx context.Context) (string, error) {
	t, err := r.Telemetry(ctx)
	if err != nil || t.Metrics == nil || t.MetricsListen == "" {
		return "", err
	}
	ln, err := net.Listen("tcp", t.MetricsListen)
	if err != nil {
		return "", &config.Error{File: r.cfg.Source(), Problems: []config.Problem{{Line: r.cfg.Line("telemetry.metrics.listen"),
			Key: "telemetry.metrics.listen", Problem: "cannot listen: " + err.Error()}}}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.Metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close() //nolint:errcheck // the process is stopping
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && r.opts.Logger != nil {
			r.opts.Logger.Error("metrics listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	return ln.Addr().String(), nil
}
