package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/metrics"
)

// chat sends one Chat Completions request and returns its status and body.
func chat(t *testing.T, url, key, input string) (int, string) {
	t.Helper()
	body := `{"model":"` + server.DefaultModel + `","messages":[{"role":"user","content":"` + input + `"}]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scrape reads /metrics and parses it with Prometheus's text-format parser.
func scrape(t *testing.T, url, key string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser rejects /metrics: %v", err)
	}
	return fams
}

// value returns the value of the sample of family name whose labels are
// exactly labels ("k=v,k=v"; a histogram's count), or -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name, labels string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(ls)
		if strings.Join(ls, ",") != labels {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// Four runs through the server — one answered, one retried, one refused
// write, one error report — then a scrape: each count is what those runs
// did, and no label names a thread or a user.
func TestMetricsAfterKnownRuns(t *testing.T) {
	m := metrics.New(metrics.Options{Providers: map[string]string{"task_extraction": "openai", "classifier": "openai", "orchestrator": "openai", "response": "ollama"}})
	a, _ := teletest.Agent(t, memory.New(), m, false)
	srv, err := server.New(server.Config{Runner: a, Metrics: m.Handler(), ObserveRequest: m.ObserveRequest})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, word := range []string{teletest.Answered, teletest.Retried, teletest.RefusedWrite, teletest.ErrorReport} {
		if code, body := chat(t, ts.URL, "", teletest.Inputs[word]); code != http.StatusOK {
			t.Fatalf("%s: %d %s", word, code, body)
		}
	}
	chat(t, ts.URL, "", "") // an empty message: 400
	// The server answers on a run's last event; the run ends just after.
	fams := scrape(t, ts.URL, "")
	for deadline := time.Now().Add(10 * time.Second); value(fams, "capgraph_runs_active", "") != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		fams = scrape(t, ts.URL, "")
	}
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"capgraph_runs_total", "outcome=answered", 2},
		{"capgraph_runs_total", "outcome=error_report", 2},
		{"capgraph_runs_total", "outcome=failed", -1},
		{"capgraph_runs_active", "", 0},
		{"capgraph_threads_active", "", 4},
		{"capgraph_retries_total", "node=read_current", 1},
		{"capgraph_failures_total", "recovery=retry,severity=retriable", 1},
		// The interlock and the refused write (writes disabled is CRITICAL).
		{"capgraph_failures_total", "recovery=error_node,severity=critical", 2},
		{"capgraph_side_effects_total", "capability=set_current,outcome=refused", 1},
		{"capgraph_side_effects_total", "capability=set_current,outcome=confirmed", -1},
		{"capgraph_node_duration_seconds", "node=read_current", 3},
		{"capgraph_node_duration_seconds", "node=task_extraction", 4},
		{"capgraph_node_duration_seconds", "node=error", 2},
		{"capgraph_capability_attempt_duration_seconds", "capability=read_current,outcome=failed", 2},
		{"capgraph_capability_attempt_duration_seconds", "capability=read_current,outcome=ok", 1},
		{"capgraph_llm_calls_total", "provider=openai,role=task_extraction", 4},
		{"capgraph_llm_calls_total", "provider=ollama,role=response", 2},
		{"capgraph_llm_errors_total", "provider=ollama,role=response", -1},
		{"capgraph_http_requests_total", "route=POST /v1/chat/completions,status=200", 4},
		{"capgraph_http_requests_total", "route=POST /v1/chat/completions,status=400", 1},
	} {
		if got := value(fams, c.name, c.labels); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := value(fams, "capgraph_store_commit_duration_seconds", ""); got < 4*5 {
		t.Errorf("store commits observed: %v, want at least five per run", got)
	}
	if got := value(fams, "capgraph_llm_tokens_total", "direction=prompt,provider=openai,role=orchestrator"); got < 0 {
		t.Errorf("no prompt tokens of the orchestrator")
	}
	for name, f := range fams {
		for _, mm := range f.Metric {
			for _, l := range mm.Label {
				if l.GetName() == "thread" || l.GetName() == "run" || l.GetName() == "user" || strings.Contains(l.GetValue(), "beam current") {
					t.Errorf("%s has a label %s=%q: cardinality must stay bounded", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
	if fams["go_goroutines"] == nil {
		t.Error("no Go runtime metrics")
	}
}

// With API keys, /metrics needs one like the rest of the API.
func TestMetricsBehindAKey(t *testing.T) {
	m := metrics.New(metrics.Options{})
	a, _ := teletest.Agent(t, memory.New(), m, false)
	srv, err := server.New(server.Config{
		Runner:         a,
		Metrics:        m.Handler(),
		ObserveRequest: m.ObserveRequest,
		Auth: server.Auth{
			Principals: []server.Principal{{Name: "prometheus", KeySHA256: server.HashKey("scrape-key")}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, key := range []string{"", "wrong-key"} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /metrics with key %q: %d, want 401", key, resp.StatusCode)
		}
	}
	fams := scrape(t, ts.URL, "scrape-key")
	if got := value(fams, "capgraph_http_requests_total", "route=GET /metrics,status=401"); got != 2 {
		t.Errorf("refused scrapes counted %v, want 2", got)
	}
}

// With the request observer in front, streams still stream: a streamed
// chat answer arrives as server-sent events, flushed chunk by chunk, and is
// counted once it ends.
func TestStreamsPassTheRequestObserver(t *testing.T) {
	m := metrics.New(metrics.Options{NoProcessMetrics: true})
	a, _ := teletest.Agent(t, memory.New(), m, false)
	srv, err := server.New(server.Config{Runner: a, Metrics: m.Handler(), ObserveRequest: m.ObserveRequest})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	body := `{"model":"` + server.DefaultModel + `","stream":true,"messages":[{"role":"user","content":"` + teletest.Inputs[teletest.Answered] + `"}]}`
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		!strings.Contains(string(b), "data: [DONE]") || !strings.Contains(string(b), "401.5") {
		t.Fatalf("stream: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	fams := scrape(t, ts.URL, "")
	if got := value(fams, "capgraph_http_requests_total", "route=POST /v1/chat/completions,status=200"); got != 1 {
		t.Errorf("streamed request counted %v times, want 1", got)
	}
}
