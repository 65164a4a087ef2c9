package capabilities_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

type scanArgs struct {
	Magnet string    `json:"magnet" jsonschema:"the magnet, e.g. Q1"`
	Points int       `json:"points,omitempty"`
	From   float64   `json:"from"`
	Tags   []string  `json:"tags,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	Note   *string   `json:"note"`
}

var scanKey = capabilities.Key[[]float64]("SCAN")

func scanCap() capabilities.Capability {
	return capabilities.New(capabilities.Definition{Name: "scan", Description: "Scan a magnet"}, scanKey,
		func(_ context.Context, _ capabilities.Step, a scanArgs) ([]float64, string, error) {
			return []float64{a.From, float64(a.Points)}, "scanned " + a.Magnet, nil
		})
}

// The planner sees the parameters' JSON schema, inferred from the struct:
// names from json tags, required unless omitempty/omitzero or a pointer,
// descriptions from jsonschema tags.
func TestNewInfersTheParameterSchema(t *testing.T) {
	g := scanCap().(capabilities.OrchestratorGuideProvider).OrchestratorGuide()
	var schema map[string]any
	if err := json.Unmarshal(g.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"from":{"type":"number"},"magnet":{"description":"the magnet, e.g. Q1","type":"string"},` +
		`"note":{"type":"string"},"points":{"type":"integer"},"since":{"format":"date-time","type":"string"},"tags":{"items":{"type":"string"},"type":"array"}},` +
		`"required":["from","magnet"],"type":"object"}`
	if string(g.Parameters) != want {
		t.Fatalf("schema\n%s\nwant\n%s", g.Parameters, want)
	}
}

// Parameters are checked before run: each problem names its field, and
// the failure is REPLANNING (the planner writes the step again).
func TestNewChecksParametersBeforeRun(t *testing.T) {
	c := scanCap()
	tests := []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{"from": 1.5}, []string{`parameter "magnet" is missing (a string: the magnet, e.g. Q1)`}},
		{map[string]any{"magnet": "Q1", "from": "low"}, []string{`parameter "from" must be a number, not a string`}},
		{map[string]any{"magnet": "Q1", "from": 1, "magnett": "Q2"}, []string{`there is no parameter "magnett" (the parameters are magnet, points, from, tags, since, note)`}},
		{map[string]any{"magnet": 7, "from": 1}, []string{`parameter "magnet" must be a string, not a number`}},
		{nil, []string{`"magnet" is missing`, `"from" is missing`}},
	}
	for _, tc := range tests {
		_, err := c.Execute(context.Background(), capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: tc.params}})
		var ce *capabilities.Error
		if !errors.As(err, &ce) || ce.Severity != capabilities.Replanning || ce.Kind != capabilities.KindInvalidInput {
			t.Fatalf("%v: %v, want a REPLANNING *Error", tc.params, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v\nwant %q", tc.params, err, w)
			}
		}
		if cl := capabilities.Classify(c, err, capabilities.ErrorContext{}); cl.Severity != capabilities.Replanning {
			t.Errorf("classified %s", cl.Severity)
		}
	}
	out, err := c.Execute(context.Background(), capabilities.Step{PlannedStep: capabilities.PlannedStep{Parameters: map[string]any{"magnet": "Q1", "from": 2.5, "points": 3}}})
	if err != nil || len(out.Values) != 1 || out.Values[0].Type != "SCAN" || out.Values[0].Summary != "scanned Q1" {
		t.Fatalf("good parameters: %+v, %v", out, err)
	}
	if v := out.Values[0].Value.([]float64); v[0] != 2.5 || v[1] != 3 {
		t.Fatalf("value %v", v)
	}
}

// Producers and consumers that state Go types must agree: a capability
// requiring SCAN as a string is refused where SCAN is a []float64.
func TestRegistryComparesContextGoTypes(t *testing.T) {
	run := func(context.Context, capabilities.Step) (capabilities.Output, error) {
		return capabilities.Output{}, nil
	}
	wrong := capabilities.Define(capabilities.Definition{Name: "report", Description: "Report a scan", Run: run,
		Requires: []capabilities.Requirement{capabilities.Key[string]("SCAN").Required()}})
	right := capabilities.Define(capabilities.Definition{Name: "fit", Description: "Fit a scan", Run: run,
		Requires: []capabilities.Requirement{scanKey.RequiredAll()}})
	other := capabilities.New(capabilities.Definition{Name: "scan_text", Description: "Scan as text"}, capabilities.Key[string]("SCAN"),
		func(context.Context, capabilities.Step, struct{}) (string, string, error) { return "", "", nil })
	r := capabilities.NewRegistry()
	if err := r.Register(scanCap(), wrong, right, other); err != nil {
		t.Fatal(err)
	}
	err := r.Validate()
	for _, want := range []string{`capability "report": requires SCAN as string, but scan provides it as []float64`,
		`capability "scan_text": provides SCAN as string, but scan provides it as []float64`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), `"fit"`) {
		t.Errorf("fit requires the right type: %v", err)
	}
}

// Problems of a typed capability are Register's to report, like Define's.
func TestNewProblemsAreRegistrationErrors(t *testing.T) {
	bad := capabilities.New(capabilities.Definition{Name: "bad", Description: "Bad", Provides: []string{"X"}}, capabilities.Key[int]("X"),
		func(context.Context, capabilities.Step, struct{ C chan int }) (int, string, error) { return 0, "", nil })
	err := capabilities.NewRegistry().Register(bad)
	for _, want := range []string{"New sets Run and Provides", "parameters: field C: a chan int cannot be a parameter"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Register: %v\nwant %q", err, want)
		}
	}
}

// Key.Input reads the one input of the key's type, Key.Inputs all of them.
func TestKeyInputs(t *testing.T) {
	step := capabilities.Step{PlannedStep: capabilities.PlannedStep{ContextKey: "fit"}, Resolved: []capabilities.ContextEntry{
		{Type: "SCAN", Key: "a", Value: json.RawMessage(`[1,2]`)}, {Type: "OTHER", Key: "b", Value: json.RawMessage(`"x"`)}}}
	if v, err := scanKey.Input(step); err != nil || len(v) != 2 {
		t.Fatalf("Input: %v %v", v, err)
	}
	if _, err := capabilities.Key[int]("MISSING").Input(step); !errors.Is(err, capabilities.ErrMissingInput) {
		t.Fatalf("missing: %v", err)
	}
	step.Resolved = append(step.Resolved, capabilities.ContextEntry{Type: "SCAN", Key: "c", Value: json.RawMessage(`[3]`)})
	if _, err := scanKey.Input(step); err == nil || !strings.Contains(err.Error(), "2 SCAN inputs") {
		t.Fatalf("two: %v", err)
	}
	if vs, err := scanKey.Inputs(step); err != nil || len(vs) != 2 {
		t.Fatalf("Inputs: %v %v", vs, err)
	}
}
