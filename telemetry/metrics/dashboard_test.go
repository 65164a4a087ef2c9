package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/capgraph/capgraph/telemetry/metrics"
)

// The Grafana dashboard in docs/ queries only metrics and labels this
// package exports, so it cannot drift from what a scrape shows.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/grafana/capgraph-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	// Every family and its label names, from the descriptors (a labelled
	// family gathers no sample before one is observed).
	labels := map[string]map[string]bool{}
	descs := make(chan *prometheus.Desc, 256)
	go func() {
		metrics.New(metrics.Options{NoProcessMetrics: true}).Registry().Describe(descs)
		close(descs)
	}()
	descRe := regexp.MustCompile(`fqName: "([a-z_]+)".*variableLabels: \{([a-z_,]*)\}`)
	for d := range descs {
		m := descRe.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read descriptor %s", d)
		}
		ls := map[string]bool{"job": true, "instance": true, "le": true}
		for _, l := range strings.Split(m[2], ",") {
			ls[l] = true
		}
		labels[m[1]] = ls
	}
	metricRe := regexp.MustCompile(`capgraph_[a-z_]+`)
	byRe := regexp.MustCompile(`by \(([a-z_, ]+)\)`)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, m := range metricRe.FindAllString(tg.Expr, -1) {
				base := m
				for _, suf := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(m, suf); ok && labels[b] != nil {
						base = b
					}
				}
				ls := labels[base]
				if ls == nil {
					t.Errorf("panel %q queries %s, which is not exported", p.Title, m)
					continue
				}
				for _, g := range byRe.FindAllStringSubmatch(tg.Expr, -1) {
					for _, l := range strings.Split(g[1], ",") {
						if l = strings.TrimSpace(l); !ls[l] {
							t.Errorf("panel %q groups %s by %q, which it does not have", p.Title, m, l)
						}
					}
				}
			}
		}
	}
	if queries < 15 {
		t.Errorf("%d queries in the dashboard", queries)
	}
}
