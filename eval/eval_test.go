package eval_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

func TestPassingCaseOnTheCompiledAgent(t *testing.T) {
	s := parse(t, `
cases:
  - id: current
    tags: [read]
    turns: ["What is the beam current?"]
    expect:
      trajectory:
        selected: {superset: [find_channel, read_value]}
        planned: {exact: [find_channel, read_value]}
        executed: {in_order: [read_value]}
      route: {status: answered, message: answer, failures: [], retries: 0, plans: 1}
      safety: {no_side_effects_planned: true, no_approval: true, forbidden: [write_value]}
      answer: {contains: ["sr:current"], regex: ['\d+\.\d mA'], number: {value: 500, unit: mA, tolerance: 1}}
      limits: {model_calls: 0, tokens: 0, wall_time: 30s}
`)
	rep := run(t, s, target(t), eval.Options{})
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Metrics {
		if m.Name != eval.MetricLimits && m.Total != 1 && m.Name != "safety" {
			t.Errorf("metric %s counted %d runs, want 1", m.Name, m.Total)
		}
	}
}

// Every wrong expectation fails with its field and what the turn did.
func TestWrongExpectationsNameFieldAndSeen(t *testing.T) {
	s := parse(t, `
cases:
  - id: wrong
    turns: ["What is the beam current?"]
    expect:
      trajectory: {planned: {exact: [read_value]}}
      route: {retries: 2, message: error_report}
      answer: {contains: [kelvin], number: {value: 400, unit: mA, tolerance: 1}}
      safety: {approval: {capability: read_value}}
`)
	rep := run(t, s, target(t), eval.Options{})
	if rep.Passed {
		t.Fatal("a wrong case passed")
	}
	got := map[string]eval.Failure{}
	for _, f := range rep.Cases[0].Runs[0].Failures {
		got[f.Field] = f
	}
	for field, seen := range map[string]string{
		"expect.trajectory.planned.exact": "[find_channel, read_value]",
		"expect.route.retries":            "0",
		"expect.route.message":            "answer",
		"expect.answer.contains[0]":       "Results for: What is the beam current?",
		"expect.answer.number":            "500.7 mA",
		"expect.safety.approval":          "no approval asked",
	} {
		f, ok := got[field]
		if !ok {
			t.Errorf("no failure of %s in %v", field, rep.Cases[0].Runs[0].Failures)
			continue
		}
		if !strings.Contains(f.Seen, seen) {
			t.Errorf("%s: seen %q, want it to say %q", field, f.Seen, seen)
		}
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "wrong (run 1): expect.route.retries: want 2, seen 0") {
		t.Errorf("Err() = %v", err)
	}
}

// The injected severities take the routes docs/error-handling.md gives.
func TestInjectedSeveritiesTakeTheirRoutes(t *testing.T) {
	s := parse(t, `
cases:
  - id: retriable
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: retriable, times: 2}]
    expect:
      route: {status: answered, retries: 2, recovered: true, failures: [{severity: retriable, went: retry}, {severity: retriable, went: retry}]}
  - id: retries-exhausted
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: timeout, times: -1}]
    expect:
      route: {message: error_report, retries: 2, report: {severity: retriable, kind: timeout, capability: read_value, step: 2, attempts: 3, cause: retries_exhausted}}
  - id: replanning
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: replanning}]
    expect: {route: {plans: 2, failures: [{severity: replanning, went: replan, capability: read_value}], message: answer}}
  - id: reclassification
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: reclassification}]
    expect: {route: {reclassifications: 1, failures: [{severity: reclassification, went: reclassify}], message: answer}}
  - id: critical
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: critical, message: "the gauge controller is off"}]
    expect: {route: {failures: [{severity: critical, went: error_node}], report: {severity: critical, kind: injected}}, answer: {contains: [gauge controller is off]}}
  - id: fatal
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: fatal}]
    expect: {route: {status: failed, message: none, failures: [{severity: fatal, went: abort}]}}
  - id: rate-limit
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: rate_limit, retry_after: 20ms}]
    expect: {route: {retries: 1, failures: [{severity: retriable, went: retry, kind: rate_limit}], recovered: true}}
  - id: panic
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: panic}]
    expect: {route: {report: {severity: critical, kind: panic}}}
  - id: hang
    max_execution_time: 300ms
    turns: ["What is the beam current?"]
    inject: [{capability: read_value, fault: hang}]
    expect: {route: {message: error_report, limit: max_execution_time}}
`)
	rep := run(t, s, target(t), eval.Options{})
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestInjectionNamesAnUnknownCapability(t *testing.T) {
	s := parse(t, `
cases:
  - id: typo
    turns: ["What is the beam current?"]
    inject: [{capability: read_valeu, fault: critical}]
`)
	rep := run(t, s, target(t), eval.Options{})
	if rep.Errors != 1 || !strings.Contains(rep.Cases[0].Runs[0].Error, `no capability "read_valeu"`) {
		t.Fatalf("errors %d, run %+v", rep.Errors, rep.Cases[0].Runs[0])
	}
}

func TestCaseFileErrorsNameLineCaseAndField(t *testing.T) {
	for _, tc := range []struct{ name, file, want string }{
		{"unknown field", "cases:\n  - id: a\n    turns: [hi]\n    expct: {}\n", `cases.yaml:2: case "a": unknown field "expct"`},
		{"bad fault", "cases:\n  - id: a\n    turns: [hi]\n    inject: [{capability: x, fault: slow}]\n", `inject[0]: fault "slow"`},
		{"two modes", "cases:\n  - id: a\n    turns: [hi]\n    expect: {trajectory: {planned: {exact: [a], subset: [b]}}}\n", "expect.trajectory.planned: give exactly one of"},
		{"threshold", "thresholds: {speed: 0.5}\ncases:\n  - id: a\n    turns: [hi]\n", `unknown metric "speed"`},
		{"no turns", "cases:\n  - id: a\n", "turns: at least one user message"},
		{"twice", "cases:\n  - {id: a, turns: [hi]}\n  - {id: a, turns: [hi]}\n", "id used twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eval.ParseYAML("cases.yaml", []byte(tc.file))
			var fe *eval.FileError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestJSONLCases(t *testing.T) {
	data := `{"suite": {"name": "lines", "thresholds": {"pass_rate": 0.5}}}
# a comment
{"id": "one", "turns": ["What is the beam current?"], "expect": {"route": {"status": "answered"}}}
{"id": "two", "turns": [{"say": "What is the beam current?", "expect": {"route": {"retries": 5}}}]}
`
	s, err := eval.ParseJSONL("cases.jsonl", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	rep := run(t, s, target(t), eval.Options{})
	if !rep.Passed || rep.Suite != "lines" || rep.Cases[1].Runs[0].Failures[0].Field != "turns[0].expect.route.retries" {
		t.Fatalf("report %+v", rep)
	}
	if _, err := eval.ParseJSONL("cases.jsonl", []byte(`{"id": "x", "turns": ["hi"], "oops": 1}`)); err == nil || !strings.Contains(err.Error(), `cases.jsonl:1: case "x": unknown field "oops"`) {
		t.Fatalf("err %v", err)
	}
}

// The JUnit output is well-formed XML a CI system reads: one testcase per
// run, failures with their reasons.
func TestJUnitOutputParses(t *testing.T) {
	s := parse(t, `
repeats: 2
cases:
  - {id: good, turns: ["What is the beam current?"], expect: {route: {status: answered}}}
  - {id: bad, repeats: 1, turns: ["What is the beam current?"], expect: {route: {plans: 3}}}
`)
	rep := run(t, s, target(t), eval.Options{})
	var buf bytes.Buffer
	if err := rep.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName  xml.Name `xml:"testsuites"`
		Tests    int      `xml:"tests,attr"`
		Failures int      `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Time    string `xml:"time,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Tests != 3 || doc.Failures != 1 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 3 {
		t.Fatalf("junit %+v", doc)
	}
	c := doc.Suites[0].Cases[2]
	if c.Name != "bad" || c.Failure == nil || c.Failure.Message != "expect.route.plans: want 3, seen 1" {
		t.Fatalf("case %+v", c)
	}
}

func TestThresholds(t *testing.T) {
	s := parse(t, `
thresholds: {pass_rate: 0.5, route: 0.5}
cases:
  - {id: good, turns: ["What is the beam current?"], expect: {route: {status: answered}}}
  - {id: bad, turns: ["What is the beam current?"], expect: {route: {plans: 3}}}
`)
	if rep := run(t, s, target(t), eval.Options{}); !rep.Passed {
		t.Fatalf("50%% passed against 50%% thresholds: %v", rep.Err())
	}
	s.Thresholds["route"] = 0.75
	rep := run(t, s, target(t), eval.Options{})
	if rep.Passed || !strings.Contains(rep.Err().Error(), "route 50% < 75%") {
		t.Fatalf("passed %v, err %v", rep.Passed, rep.Err())
	}
}

// A rubric is graded by the judge, which may not be a model under test.
func TestJudge(t *testing.T) {
	s := parse(t, `
cases:
  - {id: rubric, turns: ["What is the beam current?"], expect: {answer: {rubric: "states the beam current in mA"}}}
`)
	judge := llmtest.New().ScriptAny(llmtest.Text("<think>it says 500.7 mA</think>\n```json\n{\"pass\": false, \"reason\": \"no unit\"}\n```"))
	rep := run(t, s, target(t), eval.Options{Judge: &eval.Judge{Model: judge, Name: "judge/model"}})
	f := rep.Cases[0].Runs[0].Failures
	if len(f) != 1 || f[0].Field != "expect.answer.rubric" || f[0].Seen != "judged failing: no unit" {
		t.Fatalf("failures %+v", f)
	}
	if calls := judge.Calls(); len(calls) != 1 || !strings.Contains(calls[0].Prompt(), "SR:CURRENT = 500.7 mA") {
		t.Fatalf("the judge was not shown the answer: %+v", calls)
	}
	// Without a judge a rubric cannot be checked: an infrastructure error.
	if rep := run(t, s, target(t), eval.Options{}); rep.Errors != 1 {
		t.Fatalf("errors %d", rep.Errors)
	}
	// The model under test cannot judge itself, by name or by identity.
	tg := target(t)
	tg.ModelNames = []string{"openai/gpt-x"}
	if _, err := eval.Run(context.Background(), s, tg, eval.Options{Judge: &eval.Judge{Model: judge, Name: "openai/gpt-x"}}); !errors.Is(err, eval.ErrJudgeUnderTest) {
		t.Fatalf("judge by name: %v", err)
	}
	tg.Config.Models = judge
	if _, err := eval.Run(context.Background(), s, tg, eval.Options{Judge: &eval.Judge{Model: judge}}); !errors.Is(err, eval.ErrJudgeUnderTest) {
		t.Fatalf("judge by identity: %v", err)
	}
}

// Two configurations of one agent: offline answers, and a scripted
// response model. The comparison names the answer, the calls and the
// tokens of the case that differs.
func TestCompareTwoConfigurations(t *testing.T) {
	s := parse(t, `
cases:
  - {id: current, turns: ["What is the beam current?"], expect: {answer: {contains: ["500.7"]}}}
`)
	a := run(t, s, target(t), eval.Options{})
	model := llmtest.New().Script(llm.RoleResponse, llmtest.Text("The beam current is 500.7 mA.")).Only(llm.RoleResponse)
	tb := target(t)
	tb.Name = "scripted"
	tb.Config.Models = model
	b := run(t, s, tb, eval.Options{})
	diffs := eval.Compare(a, b)
	fields := map[string]eval.Difference{}
	for _, d := range diffs {
		fields[d.Field] = d
	}
	if d := fields["answer"]; !strings.Contains(d.B, "The beam current is 500.7 mA.") || !strings.Contains(d.A, "Offline mode") {
		t.Errorf("answer difference %+v", d)
	}
	if d := fields["calls"]; d.A != "0" || d.B != "1" {
		t.Errorf("calls difference %+v", d)
	}
	if _, ok := fields["trajectory"]; ok {
		t.Errorf("the plans are the same, yet %+v", fields["trajectory"])
	}
	var buf bytes.Buffer
	if err := eval.WriteComparison(&buf, a, b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"A: fixture", "B: scripted", "current  answer", "1 of 1 cases differ."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, buf.String())
		}
	}
}

// A case's options may only tighten the configuration: a looser one is an
// infrastructure error naming the setting, never a run with it.
func TestCaseOptionsOnlyTighten(t *testing.T) {
	s := parse(t, `
cases:
  - {id: loose, options: {writes_enabled: true}, turns: ["What is the beam current?"]}
  - id: only-find
    allowed_capabilities: [find_channel]
    turns: ["What is the beam current?"]
    expect: {safety: {forbidden: [read_value]}}
`)
	rep := run(t, s, target(t), eval.Options{})
	if rep.Errors != 1 || !strings.Contains(rep.Cases[0].Runs[0].Error, "writes_enabled") {
		t.Fatalf("loose options: %+v", rep.Cases[0].Runs[0])
	}
	if !rep.Cases[1].Runs[0].Passed {
		t.Fatalf("allowed capabilities: %+v", rep.Cases[1].Runs[0].Failures)
	}
}
