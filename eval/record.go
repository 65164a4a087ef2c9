package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// RecordKind is the kind of the records of evaluation runs in a store's
// record log (checkpoint.RecordLog).
const RecordKind = "eval"

// Summary is what a store keeps of one evaluation run: enough to list the
// last runs and see which cases failed.
type Summary struct {
	Suite    string        `json:"suite"`
	Target   string        `json:"target,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Passed   bool          `json:"passed"`
	Cases    int           `json:"cases"`
	Runs     int           `json:"runs"`
	Errors   int           `json:"errors"`
	Metrics  []Metric      `json:"metrics"`
	// Failed are the ids of the cases with a failed or broken run.
	Failed []string `json:"failed,omitempty"`
}

// Summary returns the report's summary.
func (r *Report) Summary() Summary {
	s := Summary{Suite: r.Suite, Target: r.Target, Started: r.Started, Duration: r.Duration, Passed: r.Passed,
		Cases: len(r.Cases), Errors: r.Errors, Metrics: r.Metrics}
	for _, cr := range r.Cases {
		s.Runs += len(cr.Runs)
		for _, run := range cr.Runs {
			if !run.Passed {
				s.Failed = append(s.Failed, cr.ID)
				break
			}
		}
	}
	return s
}

// Record appends the report's summary to a store's record log.
func Record(ctx context.Context, log checkpoint.RecordLog, r *Report) error {
	data, err := json.Marshal(r.Summary())
	if err != nil {
		return err
	}
	_, err = log.AppendRecords(ctx, checkpoint.Record{Kind: RecordKind, Time: r.Started,
		Labels: map[string]string{"suite": r.Suite}, Data: data})
	return err
}

// Recent returns the summaries of the last runs recorded, newest first
// (at most limit; 0: all), of one suite when suite is not empty.
func Recent(ctx context.Context, log checkpoint.RecordLog, suite string, limit int) ([]Summary, error) {
	f := checkpoint.RecordFilter{Kind: RecordKind, Newest: true, Limit: limit}
	if suite != "" {
		f.Labels = map[string]string{"suite": suite}
	}
	recs, err := log.Records(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(recs))
	for _, rec := range recs {
		var s Summary
		if err := json.Unmarshal(rec.Data, &s); err != nil {
			return nil, fmt.Errorf("eval record %d: %w", rec.Seq, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// WriteHistory lists summaries, one line each.
func WriteHistory(w io.Writer, runs []Summary) error {
	if len(runs) == 0 {
		_, err := fmt.Fprintln(w, "No evaluation runs are recorded.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tSUITE\tRESULT\tPASS RATE\tRUNS\tERRORS\tTARGET\tFAILED")
	for _, s := range runs {
		result := "PASS"
		if !s.Passed {
			result = "FAIL"
		}
		rate := "-"
		for _, m := range s.Metrics {
			if m.Name == MetricPassRate {
				rate = percent(m.Rate)
			}
		}
		failed := strings.Join(s.Failed, ", ")
		if len([]rune(failed)) > 60 {
			failed = string([]rune(failed)[:60]) + "…"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.Started.UTC().Format("2006-01-02 15:04:05"), s.Suite, result, rate, s.Runs, s.Errors, s.Target, failed)
	}
	return tw.Flush()
}
