package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
)

// Suite is a case file: settings and the cases.
type Suite struct {
	// Name names the suite in reports (default: the file's name).
	Name string `json:"name,omitempty"`
	// Repeats runs every case this many times (default 1); a case's own
	// repeats wins.
	Repeats int `json:"repeats,omitempty"`
	// Thresholds are the lowest pass rate each metric may have for the
	// suite to pass (MetricPassRate, MetricTrajectory, …). Default:
	// pass_rate 1, every run passes.
	Thresholds map[string]float64 `json:"thresholds,omitempty"`
	Cases      []Case             `json:"cases"`
}

// Case is one scripted conversation and what must hold of it.
type Case struct {
	// ID names the case; unique in the suite.
	ID   string   `json:"id"`
	Tags []string `json:"tags,omitempty"`
	// Turns are the user's messages, in order. A message answering an
	// approval ("yes", "no") continues the waiting run.
	Turns []Turn `json:"turns"`
	// Expect applies to the last turn.
	Expect *Expect `json:"expect,omitempty"`
	// Inject are the failures injected into capabilities during the case.
	Inject []Fault `json:"inject,omitempty"`
	// Repeats overrides the suite's.
	Repeats int `json:"repeats,omitempty"`
	// Options are the turn options of every turn (agent.TurnOptions); like
	// any request's they may only tighten the configuration's (writes_enabled:
	// false turns writes off for the case).
	Options *agent.TurnOptions `json:"options,omitempty"`
	// AllowedCapabilities, when set, are the only capabilities the case's
	// turns may use (agent.TurnRequest.AllowedCapabilities).
	AllowedCapabilities []string `json:"allowed_capabilities,omitempty"`
	// MaxExecutionTime tightens the agent's wall-clock limit per turn for
	// this case (limits.max_execution_time); it never loosens it. A case
	// injecting a hung call sets it to see the limit end the turn.
	MaxExecutionTime capabilities.Duration `json:"max_execution_time,omitempty"`
	// line is where the case starts in its file (0 for JSONL and Go).
	line int
}

// Turn is one user message, with what must hold of its turn.
type Turn struct {
	Say    string  `json:"say"`
	Expect *Expect `json:"expect,omitempty"`
}

// UnmarshalJSON accepts a plain string for a turn without expectations.
func (t *Turn) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Turn{Say: s}
		return nil
	}
	type plain Turn
	var p plain
	if err := strictJSON(b, &p); err != nil {
		return err
	}
	*t = Turn(p)
	return nil
}

// Expect is what must hold of a turn. Every part is optional.
type Expect struct {
	Trajectory *Trajectory `json:"trajectory,omitempty"`
	Route      *Route      `json:"route,omitempty"`
	Safety     *Safety     `json:"safety,omitempty"`
	Answer     *Answer     `json:"answer,omitempty"`
	Limits     *Limits     `json:"limits,omitempty"`
}

// Trajectory: the capabilities the turn selected, planned and ran.
type Trajectory struct {
	// Selected: the classifier's last selection.
	Selected *Match `json:"selected,omitempty"`
	// Planned: the steps of the turn's last plan (respond and clarify left out).
	Planned *Match `json:"planned,omitempty"`
	// Executed: the capabilities whose steps started, in order of first start.
	Executed *Match `json:"executed,omitempty"`
}

// Match compares a list of capabilities with one mode; exactly one field is set.
type Match struct {
	// Exact: the same capabilities in the same order.
	Exact []string `json:"exact,omitempty"`
	// InOrder: these appear in this order, others may come between.
	InOrder []string `json:"in_order,omitempty"`
	// AnyOrder: the same capabilities in any order.
	AnyOrder []string `json:"any_order,omitempty"`
	// Subset: nothing but these (some may be missing).
	Subset []string `json:"subset,omitempty"`
	// Superset: at least these.
	Superset []string `json:"superset,omitempty"`
	// None: no capability at all (the list must be empty).
	None bool `json:"none,omitempty"`
}

// Route: how the turn went — how it ended, the failures met and where
// each went, the budgets it used, its error report.
type Route struct {
	// Status: answered, interrupted or failed (agent.RunStatus).
	Status string `json:"status,omitempty"`
	// Message: the kind of the turn's assistant message (answer,
	// clarification, approval_request, error_report, rejected), or "none".
	Message string `json:"message,omitempty"`
	// Failures: every failure recorded this turn, in order, each with its
	// severity and where it went (Went…). An empty list: none.
	Failures *[]FailureStep `json:"failures,omitempty"`
	// Retries: retries scheduled.
	Retries *int `json:"retries,omitempty"`
	// Plans: plans made (Control.PlansCreated).
	Plans *int `json:"plans,omitempty"`
	// Reclassifications made.
	Reclassifications *int `json:"reclassifications,omitempty"`
	// Recovered: a step succeeded after a failure.
	Recovered *bool `json:"recovered,omitempty"`
	// Limit: the limit or budget that ended the turn ("" none).
	Limit *string `json:"limit,omitempty"`
	// Report: fields of the error report (the turn ended in the error node).
	Report *ReportExpect `json:"report,omitempty"`
}

// FailureStep is one failure met: its severity and where it went.
type FailureStep struct {
	Severity   string `json:"severity"`
	Went       string `json:"went,omitempty"`
	Capability string `json:"capability,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// Where a failure went.
const (
	WentRetry      = "retry"      // the same step or node again
	WentFallback   = "fallback"   // a declared fallback stood in
	WentEscalate   = "escalate"   // paused for a human (resource exhaustion)
	WentAbort      = "abort"      // FATAL: the run ended with a typed error
	WentReplan     = "replan"     // the orchestrator made a new plan
	WentReclassify = "reclassify" // the classifier selected again
	WentErrorNode  = "error_node" // the error node wrote the report
)

// ReportExpect: fields of the turn's error report (state.ErrorReport).
type ReportExpect struct {
	Severity   string `json:"severity,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Capability string `json:"capability,omitempty"`
	// Step is the failed plan step, from 1 as the report's text says it.
	Step       *int   `json:"step,omitempty"`
	Limit      string `json:"limit,omitempty"`
	Cause      string `json:"cause,omitempty"`
	SafetyStop string `json:"safety_stop,omitempty"`
	Attempts   *int   `json:"attempts,omitempty"`
	// Changed: capabilities of the steps the report lists as changes made.
	Changed *[]string `json:"changed,omitempty"`
}

// Safety: what must never happen, and the approval that must be asked.
type Safety struct {
	// NoSideEffectsPlanned: no plan of the turn holds a side-effecting step.
	NoSideEffectsPlanned bool `json:"no_side_effects_planned,omitempty"`
	// NoSideEffectsRun: no side effect was carried out (no audit record
	// "started": the framework never let a side-effecting call through).
	NoSideEffectsRun bool `json:"no_side_effects_run,omitempty"`
	// Approval: the turn asks a human to approve exactly this action.
	Approval *ApprovalExpect `json:"approval,omitempty"`
	// NoApproval: the turn asks for no approval.
	NoApproval bool `json:"no_approval,omitempty"`
	// Forbidden: capabilities the turn must neither plan nor run.
	Forbidden []string `json:"forbidden,omitempty"`
}

// ApprovalExpect is the action a human must be asked about.
type ApprovalExpect struct {
	Capability string `json:"capability"`
	// Changes are compared with the action's, in order: target exactly,
	// a number within Tolerance, unit exactly when given.
	Changes []ChangeExpect `json:"changes,omitempty"`
	// SummaryContains: text the question shows.
	SummaryContains string `json:"summary_contains,omitempty"`
}

// ChangeExpect is one change of an approved action.
type ChangeExpect struct {
	Target    string  `json:"target"`
	Value     any     `json:"value"`
	Unit      string  `json:"unit,omitempty"`
	Tolerance float64 `json:"tolerance,omitempty"`
}

// Answer: the turn's assistant message.
type Answer struct {
	Contains    []string `json:"contains,omitempty"`
	NotContains []string `json:"not_contains,omitempty"`
	// Regex: each must match somewhere.
	Regex []string `json:"regex,omitempty"`
	// Number: a number followed by Unit within Tolerance of Value.
	Number *Number `json:"number,omitempty"`
	// Rubric is judged by the judge model (Options.Judge), which must not
	// be a model under test.
	Rubric string `json:"rubric,omitempty"`
}

// Number is a value with a unit the answer must state.
type Number struct {
	Value     float64 `json:"value"`
	Unit      string  `json:"unit,omitempty"`
	Tolerance float64 `json:"tolerance,omitempty"`
}

// Limits: what the turn may use at most.
type Limits struct {
	ModelCalls *int                  `json:"model_calls,omitempty"`
	Tokens     *int                  `json:"tokens,omitempty"`
	WallTime   capabilities.Duration `json:"wall_time,omitempty"`
}

// Fault is a failure injected into a capability: its Call-th execution in
// the case (from 1) and the Times-1 after it fail with Fault.
type Fault struct {
	Capability string `json:"capability"`
	// Fault: a severity (retriable, replanning, reclassification,
	// critical, fatal), or timeout, rate_limit (HTTP 429), unavailable
	// (HTTP 503), panic, hang.
	Fault string `json:"fault"`
	// Call is the execution that fails first, from 1 (default 1).
	Call int `json:"call,omitempty"`
	// Times is how many executions in a row fail (default 1; -1: all).
	Times int `json:"times,omitempty"`
	// RetryAfter: the Retry-After of a rate_limit or unavailable, or of an injected
	// severity (which replaces the retry policy's delay).
	RetryAfter capabilities.Duration `json:"retry_after,omitempty"`
	// Message is the error's text (default: "injected <fault>").
	Message string `json:"message,omitempty"`
}

// The injectable faults besides the severities.
const (
	FaultTimeout     = "timeout"     // the call's deadline passed (context.DeadlineExceeded)
	FaultRateLimit   = "rate_limit"  // HTTP 429 with Retry-After
	FaultUnavailable = "unavailable" // HTTP 503, with Retry-After when given
	FaultPanic       = "panic"       // the capability panics
	FaultHang        = "hang"        // the call never returns until its context ends
)

// Metrics a threshold may name.
const (
	MetricPassRate   = "pass_rate"  // runs whose every expectation held
	MetricTrajectory = "trajectory" // runs whose trajectory expectations held, of those with some
	MetricRoute      = "route"
	MetricSafety     = "safety"
	MetricAnswer     = "answer"
	MetricLimits     = "limits"
)

// Metrics lists the metrics in report order.
func Metrics() []string {
	return []string{MetricPassRate, MetricTrajectory, MetricRoute, MetricSafety, MetricAnswer, MetricLimits}
}

// FileError is a problem of a case file, with where it is.
type FileError struct {
	File string
	Line int
	// Case is the case's id, if the problem is in one.
	Case    string
	Problem string
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Case != "" {
		fmt.Fprintf(&b, ": case %q", e.Case)
	}
	b.WriteString(": " + e.Problem)
	return b.String()
}

// Load reads a case file: YAML, or JSONL (one case per line, a .jsonl
// file; a line {"suite": {...}} holds the settings).
func Load(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s *Suite
	if strings.HasSuffix(path, ".jsonl") {
		s, err = ParseJSONL(filepath.Base(path), data)
	} else {
		s, err = ParseYAML(filepath.Base(path), data)
	}
	if err != nil {
		return nil, err
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return s, nil
}

// ParseYAML parses a YAML case file; name is used in errors.
func ParseYAML(name string, data []byte) (*Suite, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &FileError{File: name, Problem: err.Error()}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &FileError{File: name, Problem: "a case file is a mapping with a cases: list"}
	}
	doc := root.Content[0]
	s := &Suite{}
	var caseNodes []*yaml.Node
	settings := map[string]any{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Value == "cases" {
			if v.Kind != yaml.SequenceNode {
				return nil, &FileError{File: name, Line: v.Line, Problem: "cases must be a list"}
			}
			caseNodes = v.Content
			continue
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return nil, &FileError{File: name, Line: v.Line, Problem: err.Error()}
		}
		settings[k.Value] = x
	}
	b, err := json.Marshal(settings)
	if err == nil {
		err = strictJSON(b, s)
	}
	if err != nil {
		return nil, &FileError{File: name, Line: doc.Line, Problem: err.Error()}
	}
	for _, n := range caseNodes {
		c, err := decodeCase(n)
		if err != nil {
			return nil, &FileError{File: name, Line: n.Line, Case: caseID(n), Problem: err.Error()}
		}
		c.line = n.Line
		s.Cases = append(s.Cases, c)
	}
	return s, s.validate(name)
}

func decodeCase(n *yaml.Node) (Case, error) {
	var x any
	if err := n.Decode(&x); err != nil {
		return Case{}, err
	}
	b, err := json.Marshal(x)
	if err != nil {
		return Case{}, err
	}
	var c Case
	return c, strictJSON(b, &c)
}

// caseID finds a case node's id for an error message.
func caseID(n *yaml.Node) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "id" {
			return n.Content[i+1].Value
		}
	}
	return ""
}

// ParseJSONL parses a JSONL case file: one case per line; blank lines and
// lines starting with # are skipped; a line {"suite": {...}} holds the
// settings (name, repeats, thresholds).
func ParseJSONL(name string, data []byte) (*Suite, error) {
	s := &Suite{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var probe struct {
			Suite json.RawMessage `json:"suite"`
			ID    string          `json:"id"`
		}
		_ = json.Unmarshal([]byte(text), &probe)
		if probe.Suite != nil {
			if err := strictJSON(probe.Suite, s); err != nil {
				return nil, &FileError{File: name, Line: line, Problem: err.Error()}
			}
			if len(s.Cases) > 0 {
				return nil, &FileError{File: name, Line: line, Problem: "the suite line holds no cases"}
			}
			continue
		}
		var c Case
		if err := strictJSON([]byte(text), &c); err != nil {
			return nil, &FileError{File: name, Line: line, Case: probe.ID, Problem: err.Error()}
		}
		c.line = line
		s.Cases = append(s.Cases, c)
	}
	if err := sc.Err(); err != nil {
		return nil, &FileError{File: name, Line: line, Problem: err.Error()}
	}
	return s, s.validate(name)
}

// strictJSON decodes b into v, refusing unknown fields and trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`)

// Validate checks a suite built in Go (Load and the parsers check theirs).
func (s *Suite) Validate() error { return s.validate("suite") }

func (s *Suite) validate(file string) error {
	var errs []error
	bad := func(c *Case, problem string) {
		e := &FileError{File: file, Problem: problem}
		if c != nil {
			e.Case, e.Line = c.ID, c.line
		}
		errs = append(errs, e)
	}
	if len(s.Cases) == 0 {
		bad(nil, "no cases")
	}
	if s.Repeats < 0 {
		bad(nil, "repeats must not be negative")
	}
	for m, v := range s.Thresholds {
		if !isMetric(m) {
			bad(nil, fmt.Sprintf("thresholds: unknown metric %q (want one of %s)", m, strings.Join(Metrics(), ", ")))
		}
		if v < 0 || v > 1 {
			bad(nil, fmt.Sprintf("thresholds: %s is %v; a threshold is a pass rate from 0 to 1", m, v))
		}
	}
	seen := map[string]bool{}
	for i := range s.Cases {
		c := &s.Cases[i]
		if !idPattern.MatchString(c.ID) {
			bad(c, fmt.Sprintf("case %d: id %q must be letters, digits and . _ : / -", i+1, c.ID))
		}
		if seen[c.ID] {
			bad(c, "id used twice")
		}
		seen[c.ID] = true
		if len(c.Turns) == 0 {
			bad(c, "turns: at least one user message is required")
		}
		for j, t := range c.Turns {
			if strings.TrimSpace(t.Say) == "" {
				bad(c, fmt.Sprintf("turns[%d]: say is empty", j))
			}
			if err := t.Expect.validate(); err != nil {
				bad(c, fmt.Sprintf("turns[%d].expect.%v", j, err))
			}
		}
		if err := c.Expect.validate(); err != nil {
			bad(c, "expect."+err.Error())
		}
		if c.Repeats < 0 {
			bad(c, "repeats must not be negative")
		}
		for j, f := range c.Inject {
			if err := f.validate(); err != nil {
				bad(c, fmt.Sprintf("inject[%d]: %v", j, err))
			}
		}
	}
	return errors.Join(errs...)
}

func isMetric(m string) bool {
	for _, x := range Metrics() {
		if x == m {
			return true
		}
	}
	return false
}

func (e *Expect) validate() error {
	if e == nil {
		return nil
	}
	var errs []error
	if t := e.Trajectory; t != nil {
		for _, m := range []struct {
			name string
			m    *Match
		}{{"selected", t.Selected}, {"planned", t.Planned}, {"executed", t.Executed}} {
			if err := m.m.validate(); err != nil {
				errs = append(errs, fmt.Errorf("trajectory.%s: %w", m.name, err))
			}
		}
	}
	if r := e.Route; r != nil {
		switch r.Status {
		case "", "answered", "interrupted", "failed":
		default:
			errs = append(errs, fmt.Errorf("route.status: %q is not answered, interrupted or failed", r.Status))
		}
		switch r.Message {
		case "", "none", "answer", "clarification", "approval_request", "error_report", "rejected":
		default:
			errs = append(errs, fmt.Errorf("route.message: %q is not answer, clarification, approval_request, error_report, rejected or none", r.Message))
		}
		if r.Failures != nil {
			for i, f := range *r.Failures {
				if _, err := capabilities.ParseSeverity(f.Severity); err != nil {
					errs = append(errs, fmt.Errorf("route.failures[%d].severity: %q is not a severity", i, f.Severity))
				}
				switch f.Went {
				case "", WentRetry, WentFallback, WentEscalate, WentAbort, WentReplan, WentReclassify, WentErrorNode:
				default:
					errs = append(errs, fmt.Errorf("route.failures[%d].went: %q is not retry, fallback, escalate, abort, replan, reclassify or error_node", i, f.Went))
				}
			}
		}
		if r.Report != nil && r.Report.Severity != "" {
			if _, err := capabilities.ParseSeverity(r.Report.Severity); err != nil {
				errs = append(errs, fmt.Errorf("route.report.severity: %q is not a severity", r.Report.Severity))
			}
		}
	}
	if s := e.Safety; s != nil && s.Approval != nil && s.Approval.Capability == "" {
		errs = append(errs, errors.New("safety.approval.capability is required"))
	}
	if a := e.Answer; a != nil {
		for i, re := range a.Regex {
			if _, err := regexp.Compile(re); err != nil {
				errs = append(errs, fmt.Errorf("answer.regex[%d]: %v", i, err))
			}
		}
		if a.Number != nil && a.Number.Tolerance < 0 {
			errs = append(errs, errors.New("answer.number.tolerance must not be negative"))
		}
	}
	if l := e.Limits; l != nil {
		if (l.ModelCalls != nil && *l.ModelCalls < 0) || (l.Tokens != nil && *l.Tokens < 0) {
			errs = append(errs, errors.New("limits must not be negative"))
		}
	}
	return errors.Join(errs...)
}

func (m *Match) validate() error {
	if m == nil {
		return nil
	}
	n := 0
	for _, set := range []bool{m.Exact != nil, m.InOrder != nil, m.AnyOrder != nil, m.Subset != nil, m.Superset != nil, m.None} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of exact, in_order, any_order, subset, superset, none")
	}
	return nil
}

func (f Fault) validate() error {
	if f.Capability == "" {
		return errors.New("capability is required")
	}
	if f.Call < 0 || f.Times < -1 {
		return errors.New("call must be ≥ 1 and times ≥ 1 (or -1 for every call)")
	}
	switch f.Fault {
	case FaultTimeout, FaultRateLimit, FaultUnavailable, FaultPanic, FaultHang:
		return nil
	}
	if _, err := capabilities.ParseSeverity(f.Fault); err != nil || f.Fault == "" {
		return fmt.Errorf("fault %q: want retriable, replanning, reclassification, critical, fatal, timeout, rate_limit, unavailable, panic or hang", f.Fault)
	}
	return nil
}
