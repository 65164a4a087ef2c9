package eval

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of running a suite against a target.
type Report struct {
	Suite    string        `json:"suite"`
	Target   string        `json:"target,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Cases    []CaseResult  `json:"cases"`
	// Metrics are the pass rates by metric (MetricPassRate, …), with their
	// thresholds.
	Metrics []Metric `json:"metrics"`
	// Thresholds are the suite's (default pass_rate 1).
	Thresholds map[string]float64 `json:"thresholds"`
	// Errors counts the runs with an infrastructure error.
	Errors int `json:"errors"`
	// Passed: no infrastructure error and every threshold held.
	Passed bool `json:"passed"`
}

// CaseResult is every run of one case.
type CaseResult struct {
	ID       string      `json:"id"`
	Tags     []string    `json:"tags,omitempty"`
	Runs     []RunResult `json:"runs"`
	PassRate float64     `json:"pass_rate"`
	index    int
}

// Metric is one metric's pass rate.
type Metric struct {
	Name   string  `json:"name"`
	Passed int     `json:"passed"`
	Total  int     `json:"total"`
	Rate   float64 `json:"rate"`
	// Threshold is the lowest rate allowed; nil when none is set.
	Threshold *float64 `json:"threshold,omitempty"`
	OK        bool     `json:"ok"`
}

func (s *Suite) thresholds() map[string]float64 {
	if len(s.Thresholds) == 0 {
		return map[string]float64{MetricPassRate: 1}
	}
	return s.Thresholds
}

// score computes the pass rates and whether the thresholds hold.
func (r *Report) score() {
	passed, total := map[string]int{}, map[string]int{}
	for i := range r.Cases {
		cr := &r.Cases[i]
		n := 0
		for _, run := range cr.Runs {
			total[MetricPassRate]++
			if run.Passed {
				passed[MetricPassRate]++
				n++
			}
			if run.Error != "" {
				r.Errors++
			}
			failed := map[string]bool{}
			for _, f := range run.Failures {
				failed[f.Metric] = true
			}
			for m := range run.metrics {
				total[m]++
				if !failed[m] && run.Error == "" {
					passed[m]++
				}
			}
		}
		cr.PassRate = rate(n, len(cr.Runs))
	}
	r.Passed = r.Errors == 0
	for _, name := range Metrics() {
		m := Metric{Name: name, Passed: passed[name], Total: total[name], Rate: rate(passed[name], total[name]), OK: true}
		if th, ok := r.Thresholds[name]; ok {
			m.Threshold = &th
			m.OK = m.Rate >= th
		}
		if !m.OK {
			r.Passed = false
		}
		r.Metrics = append(r.Metrics, m)
	}
}

// metricText is a metric's rate and counts, "-" when no run expected anything of it.
func metricText(m Metric) string {
	if m.Total == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d/%d)", percent(m.Rate), m.Passed, m.Total)
}

func rate(n, total int) float64 {
	if total == 0 {
		return 1
	}
	return float64(n) / float64(total)
}

// Err returns nil when the report passed, else an error listing every
// failed expectation and infrastructure error: what an application's
// go test reports.
func (r *Report) Err() error {
	if r.Passed {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "eval %s: ", r.Suite)
	var bad []string
	for _, m := range r.Metrics {
		if !m.OK {
			bad = append(bad, fmt.Sprintf("%s %.0f%% < %.0f%%", m.Name, 100*m.Rate, 100**m.Threshold))
		}
	}
	if r.Errors > 0 {
		bad = append(bad, fmt.Sprintf("%d infrastructure errors", r.Errors))
	}
	b.WriteString(strings.Join(bad, ", "))
	for _, cr := range r.Cases {
		for _, run := range cr.Runs {
			for _, f := range run.Failures {
				fmt.Fprintf(&b, "\n%s (run %d): %s", cr.ID, run.Repeat+1, f)
			}
			if run.Error != "" {
				fmt.Fprintf(&b, "\n%s (run %d): error: %s", cr.ID, run.Repeat+1, run.Error)
			}
		}
	}
	return errors.New(b.String())
}

// means returns a case's mean model calls, tokens and duration per run.
func (cr *CaseResult) means() (calls, tokens float64, d time.Duration) {
	if len(cr.Runs) == 0 {
		return 0, 0, 0
	}
	var total time.Duration
	for _, run := range cr.Runs {
		calls += float64(run.ModelCalls)
		tokens += float64(run.Tokens)
		total += run.Duration
	}
	n := float64(len(cr.Runs))
	return calls / n, tokens / n, total / time.Duration(len(cr.Runs))
}

// WriteText writes each case's result (with the reason of every failed
// expectation) and the summary table.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tPASS\tCALLS\tTOKENS\tTIME")
	for _, cr := range r.Cases {
		passed := 0
		for _, run := range cr.Runs {
			if run.Passed {
				passed++
			}
		}
		result := "pass"
		switch {
		case hasError(cr):
			result = "error"
		case passed < len(cr.Runs):
			result = "FAIL"
		}
		calls, tokens, d := cr.means()
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\t%s\n", cr.ID, result, passed, len(cr.Runs), num(calls), num(tokens), roundDuration(d))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, cr := range r.Cases {
		for _, run := range cr.Runs {
			if run.Passed {
				continue
			}
			fmt.Fprintf(w, "\n%s (run %d):\n", cr.ID, run.Repeat+1)
			if run.Error != "" {
				fmt.Fprintf(w, "  error: %s\n", run.Error)
			}
			for _, f := range run.Failures {
				fmt.Fprintf(w, "  %s\n", f)
			}
		}
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tPASSED\tRATE\tTHRESHOLD\t")
	for _, m := range r.Metrics {
		th, mark := "-", ""
		if m.Threshold != nil {
			th = percent(*m.Threshold)
			if !m.OK {
				mark = "below threshold"
			}
		}
		rate := percent(m.Rate)
		if m.Total == 0 {
			rate = "-" // no case expects anything of it
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\n", m.Name, m.Passed, m.Total, rate, th, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	verdict := "PASS"
	if !r.Passed {
		verdict = "FAIL"
	}
	runs := 0
	for _, cr := range r.Cases {
		runs += len(cr.Runs)
	}
	_, err := fmt.Fprintf(w, "\n%s: %d cases, %d runs, %d infrastructure errors, %s\n", verdict, len(r.Cases), runs, r.Errors, roundDuration(r.Duration))
	return err
}

func hasError(cr CaseResult) bool {
	for _, run := range cr.Runs {
		if run.Error != "" {
			return true
		}
	}
	return false
}

func num(x float64) string {
	if x == float64(int64(x)) {
		return fmt.Sprint(int64(x))
	}
	return fmt.Sprintf("%.1f", x)
}

func percent(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }

func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// JUnit's XML, as CI systems read it.
type (
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name      string      `xml:"name,attr"`
		Tests     int         `xml:"tests,attr"`
		Failures  int         `xml:"failures,attr"`
		Errors    int         `xml:"errors,attr"`
		Time      string      `xml:"time,attr"`
		Timestamp string      `xml:"timestamp,attr"`
		Cases     []junitCase `xml:"testcase"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

// WriteJUnit writes the report as JUnit XML: one testcase per case run.
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: r.Suite, Time: seconds(r.Duration), Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05")}
	for _, cr := range r.Cases {
		for _, run := range cr.Runs {
			name := cr.ID
			if len(cr.Runs) > 1 {
				name = fmt.Sprintf("%s#%d", cr.ID, run.Repeat+1)
			}
			tc := junitCase{Name: name, Classname: r.Suite, Time: seconds(run.Duration)}
			switch {
			case run.Error != "":
				tc.Error = &junitProblem{Message: run.Error, Type: "infrastructure", Text: run.Error}
				s.Errors++
			case len(run.Failures) > 0:
				lines := make([]string, len(run.Failures))
				for i, f := range run.Failures {
					lines[i] = f.String()
				}
				tc.Failure = &junitProblem{Message: lines[0], Type: run.Failures[0].Metric, Text: strings.Join(lines, "\n")}
				s.Failures++
			}
			s.Tests++
			s.Cases = append(s.Cases, tc)
		}
	}
	doc := junitSuites{Name: r.Suite, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Difference is one way a case went differently under two configurations.
type Difference struct {
	Case string `json:"case"`
	// Field is trajectory, route, answer, pass_rate, calls or tokens.
	Field string `json:"field"`
	A     string `json:"a"`
	B     string `json:"b"`
}

// Compare lists the per-case differences between two reports of the same
// suite: the last turn's plan (trajectory), its failures and how it
// ended (route) and its answer, of each case's first run; the pass rate;
// the mean model calls and tokens. Cases only one report has are
// differences of field "case".
func Compare(a, b *Report) []Difference {
	byID := map[string]*CaseResult{}
	for i := range b.Cases {
		byID[b.Cases[i].ID] = &b.Cases[i]
	}
	var out []Difference
	seen := map[string]bool{}
	for i := range a.Cases {
		ca := &a.Cases[i]
		seen[ca.ID] = true
		cb, ok := byID[ca.ID]
		if !ok {
			out = append(out, Difference{Case: ca.ID, Field: "case", A: "ran", B: "not run"})
			continue
		}
		add := func(field, x, y string) {
			if x != y {
				out = append(out, Difference{Case: ca.ID, Field: field, A: x, B: y})
			}
		}
		ta, tb := firstLast(ca), firstLast(cb)
		add("trajectory", list(ta.Plan()), list(tb.Plan()))
		add("route", routeText(ta), routeText(tb))
		if ta.Answer() != tb.Answer() {
			out = append(out, Difference{Case: ca.ID, Field: "answer", A: shortText(ta.Answer()), B: shortText(tb.Answer())})
		}
		add("pass_rate", percent(ca.PassRate), percent(cb.PassRate))
		callsA, tokensA, _ := ca.means()
		callsB, tokensB, _ := cb.means()
		add("calls", num(callsA), num(callsB))
		add("tokens", num(tokensA), num(tokensB))
	}
	for _, cb := range b.Cases {
		if !seen[cb.ID] {
			out = append(out, Difference{Case: cb.ID, Field: "case", A: "not run", B: "ran"})
		}
	}
	return out
}

// shortText is an answer cut for a table cell.
func shortText(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "no answer"
	}
	if r := []rune(s); len(r) > compareWidth {
		s = string(r[:compareWidth]) + "…"
	}
	return strconv.Quote(s)
}

// compareWidth is how much of an answer a comparison shows.
const compareWidth = 60

// firstLast is the last turn of a case's first run (an empty trace when none ran).
func firstLast(cr *CaseResult) *Trace {
	if len(cr.Runs) > 0 {
		if t := cr.Runs[0].Last(); t != nil {
			return t
		}
	}
	return &Trace{}
}

func routeText(t *Trace) string {
	s := string(t.Status) + ", " + kindOf(t.Message)
	if len(t.Failures) > 0 {
		s += ", " + failuresText(t.Failures)
	}
	if t.PlansCreated > 1 {
		s += fmt.Sprintf(", %d plans", t.PlansCreated)
	}
	return s
}

// WriteComparison writes the differences of Compare under the two
// configurations' names, then both reports' metrics and times side by side.
func WriteComparison(w io.Writer, a, b *Report) error {
	diffs := Compare(a, b)
	nameA, nameB := a.Target, b.Target
	if nameA == "" {
		nameA = "A"
	}
	if nameB == "" || nameB == nameA {
		nameB = "B"
	}
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", nameA, nameB)
	if len(diffs) == 0 {
		fmt.Fprintln(w, "No case differs.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE\tFIELD\tA\tB")
		for _, d := range diffs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.Case, d.Field, d.A, d.B)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		cases := map[string]bool{}
		for _, d := range diffs {
			cases[d.Case] = true
		}
		fmt.Fprintf(w, "\n%d of %d cases differ.\n", len(cases), max(len(a.Cases), len(b.Cases)))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tA\tB")
	mb := map[string]Metric{}
	for _, m := range b.Metrics {
		mb[m.Name] = m
	}
	for _, m := range a.Metrics {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, metricText(m), metricText(mb[m.Name]))
	}
	fmt.Fprintf(tw, "time\t%s\t%s\n", roundDuration(a.Duration), roundDuration(b.Duration))
	return tw.Flush()
}
