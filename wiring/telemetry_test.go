package wiring_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/logging/logrusadapter"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// With no telemetry section nothing observes the runs (the agent's hot
// path stays as it is) and the server has no /metrics.
func TestTelemetryOffByDefault(t *testing.T) {
	reg := registry(t, "beam")
	rt, err := wiring.New(parse(t, "fallback: offline\n"), wiring.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return reg.All(), nil }},
		wiring.Options{Store: "memory", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ac, err := rt.AgentConfig(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ac.Observer != nil {
		t.Errorf("observer %T without a telemetry section", ac.Observer)
	}
	sc, err := rt.ServerConfig(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Metrics != nil || sc.ObserveRequest != nil {
		t.Error("metrics served without telemetry.metrics.enabled")
	}
}

// telemetry.metrics.enabled: /metrics on the server behind its keys, or on
// a listener of its own; LogRuns logs each run's events.
func TestTelemetryFromFile(t *testing.T) {
	reg := registry(t, "beam")
	app := wiring.App{Capabilities: func(*config.Config) ([]capabilities.Capability, error) { return reg.All(), nil }}
	t.Run("behind the server's keys", func(t *testing.T) {
		logs := &lockedBuffer{}
		logger, err := logrusadapter.New(logrusadapter.Config{Format: logrusadapter.FormatJSON, Output: logs})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := wiring.New(parse(t, "telemetry:\n  metrics:\n    enabled: true\n"), app,
			wiring.Options{Store: "memory", Getenv: func(string) string { return "" }, Logger: logger, LogRuns: true})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		sc, err := rt.ServerConfig(context.Background(), logger)
		if err != nil {
			t.Fatal(err)
		}
		srv, err := server.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv.Handler())
		defer ts.Close()
		a, _ := rt.Agent(context.Background())
		for _, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "t1", Input: "beam current?"}) {
			if err != nil {
				t.Fatal(err)
			}
		}
		code, body := get(t, ts.URL+"/metrics")
		if code != http.StatusOK || !strings.Contains(body, `capgraph_runs_total{outcome="answered"} 1`) {
			t.Errorf("GET /metrics: %d\n%s", code, body)
		}
		if !strings.Contains(logs.String(), `"msg":"run ended"`) || !strings.Contains(logs.String(), `"thread":"t1"`) {
			t.Errorf("no run log lines:\n%s", logs.String())
		}
	})
	t.Run("own listener", func(t *testing.T) {
		rt, err := wiring.New(parse(t, "telemetry:\n  metrics:\n    enabled: true\n    listen: 127.0.0.1:0\n"), app,
			wiring.Options{Store: "memory", Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close()
		sc, err := rt.ServerConfig(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Metrics != nil || sc.ObserveRequest == nil {
			t.Error("with a listener of its own, the server must not serve /metrics but must count requests")
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		addr, err := rt.ServeMetrics(ctx)
		if err != nil || addr == "" {
			t.Fatalf("ServeMetrics: %q, %v", addr, err)
		}
		if code, body := get(t, "http://"+addr+"/metrics"); code != http.StatusOK || !strings.Contains(body, "capgraph_runs_active 0") {
			t.Errorf("GET /metrics on %s: %d\n%s", addr, code, body)
		}
	})
	t.Run("traces from OTEL_TRACES_EXPORTER", func(t *testing.T) {
		env := map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
		rt, err := wiring.New(parse(t, "fallback: offline\n"), app, wiring.Options{Store: "memory", Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		tel, err := rt.Telemetry(context.Background())
		if err != nil || !tel.Tracing || tel.Observer == nil {
			t.Fatalf("Telemetry: %+v, %v; want traces on", tel, err)
		}
		rt.Close() // flushes nothing (no run): returns at once
	})
}
