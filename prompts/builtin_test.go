package prompts

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sampleText draws a string among those that stress a template's layout:
// empty ones (an {{if}} skips them), blank space at either end (Render
// trims the whole), several lines, quotes, template and format syntax.
func sampleText(r *rand.Rand) string {
	pool := []string{"", "", " ", "\n", "\t x \n", "Q1", "beam current", "  leading", "trailing  \n", "two\nlines",
		`say "hi"`, "→ é ü 日本", "{{.Task}}", "%d %s", `back\slash`, "500 mA.", "CHANNEL_VALUES", "{}", "-", "\u00a0nbsp\u00a0"}
	s := pool[r.IntN(len(pool))]
	if r.IntN(4) == 0 {
		s += pool[r.IntN(len(pool))]
	}
	return s
}

// fill sets every exported field of v (a pointer) to random values, slices
// of 0–3 elements, recursively.
func fill(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(sampleText(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int:
		v.SetInt(int64(r.IntN(5) - 1))
	case reflect.Slice:
		n := r.IntN(4)
		if n == 0 && r.IntN(2) == 0 {
			v.SetZero() // nil as well as empty
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			fill(r, s.Index(i))
		}
		v.Set(s)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i))
			}
		}
	}
}

// TestBuiltinRenderersMatchTemplates renders random data of every type each
// Go renderer takes both ways: the bytes must be the embedded template's.
func TestBuiltinRenderersMatchTemplates(t *testing.T) {
	set := Default()
	types := map[string][]any{
		TaskExtractionTurn: {TaskExtractionData{}, TaskSelectionData{}},
		ClassifierBatched:  {ClassifierBatchedData{}},
		ClassifierTurn:     {ClassifierBatchedData{}, ClassifierData{}},
		Orchestrator:       {OrchestratorData{}},
		OrchestratorTurn:   {OrchestratorData{}},
		Response:           {ResponseData{}},
		ResponseTurn:       {ResponseData{}},
	}
	if len(types) != len(builtinRenderers) {
		t.Fatalf("the test covers %d renderers, builtin.go has %d", len(types), len(builtinRenderers))
	}
	for name, samples := range types {
		if set.builtin[name] == nil {
			t.Fatalf("the default set does not use the Go form of %s", name)
		}
		for _, sample := range samples {
			r := rand.New(rand.NewPCG(1, uint64(len(name))))
			for i := range 3000 {
				v := reflect.New(reflect.TypeOf(sample))
				if i > 0 { // the first: every field zero
					fill(r, v.Elem())
				}
				data := v.Elem().Interface()
				var want, got strings.Builder
				if err := set.tmpl[name].Execute(&want, data); err != nil {
					t.Fatal(err)
				}
				if !builtinRenderers[name](&got, data) {
					t.Fatalf("%s: the Go form refused %T", name, data)
				}
				if got.String() != want.String() {
					t.Fatalf("%s with %#v:\n--- Go ---\n%q\n--- template ---\n%q", name, data, got.String(), want.String())
				}
			}
		}
	}
}

// TestOverriddenTemplateIsExecuted: an override replaces the Go form too,
// and data of another type falls back to the template.
func TestOverriddenTemplateIsExecuted(t *testing.T) {
	set, err := New(Config{Overrides: map[string]string{Orchestrator: "PLAN {{.Task}} with {{len .Capabilities}}", ResponseTurn: "constant turn\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if set.builtin[Orchestrator] != nil {
		t.Fatal("the overridden orchestrator template kept its Go form")
	}
	got, err := set.Render(Orchestrator, OrchestratorData{Task: "read Q1", Capabilities: make([]PlannerCapability, 2)})
	if err != nil || got != "PLAN read Q1 with 2" {
		t.Fatalf("Render = %q, %v; want the override's output", got, err)
	}
	if got, err := set.Render(ResponseTurn, ResponseData{Task: "x"}); err != nil || got != "constant turn" {
		t.Fatalf("constant override = %q, %v", got, err)
	}
	// A map is no OrchestratorData: the Go form declines, the template reads it.
	got, err = Default().Render(OrchestratorTurn, map[string]any{"Task": "t", "Intent": "", "History": nil, "AvailableContext": nil,
		"ReplanReason": "", "FormatError": ""})
	if err != nil || got != "TASK TO PLAN: t" {
		t.Fatalf("Render(map) = %q, %v", got, err)
	}
}

// BenchmarkRenderOrchestrator renders the planner's two messages for four
// capabilities with guides and examples, as a turn does: through the Go
// form and through the template.
func BenchmarkRenderOrchestrator(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	var d OrchestratorData
	fill(r, reflect.ValueOf(&d).Elem())
	d.ReplanReason, d.FormatError = "", ""
	d.Capabilities = make([]PlannerCapability, 4)
	for i := range d.Capabilities {
		d.Capabilities[i] = PlannerCapability{Name: "channel_read", Description: "Read live values of channels.",
			Provides: []string{"CHANNEL_VALUES"}, Requires: []string{"CHANNEL_ADDRESSES"}, Instructions: strings.Repeat("Use it for present values. ", 8),
			Examples: []PlanExample{{Number: 1, Scenario: "read the beam current", Step: `{"context_key":"bc","capability":"channel_read","task_objective":"Read the beam current"}`}}}
	}
	set := Default()
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			if _, err := set.RenderPrompt(Orchestrator, d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("template", func(b *testing.B) {
		for b.Loop() {
			for _, name := range []string{Orchestrator, OrchestratorTurn} {
				var s strings.Builder
				if err := set.tmpl[name].Execute(&s, d); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
