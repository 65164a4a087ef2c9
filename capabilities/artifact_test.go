package capabilities_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

func TestArtifactConstructorsAreValid(t *testing.T) {
	var s capabilities.Series
	s.Name, s.Units = "SR:RF:CAV1:VOLT", "kV"
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		s.Add(t0.Add(time.Duration(i)*time.Minute), 4.8+float64(i)/100)
	}
	if got := s.Time(2); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("Time(2) = %v", got)
	}
	png := []byte("\x89PNG\r\n\x1a\n....")
	for _, a := range []capabilities.Artifact{
		capabilities.NewTimeSeries("RF", s),
		capabilities.NewXY("Q1 scan", capabilities.Axis{Label: "Q1 current", Units: "A"}, capabilities.Axis{Label: "beam size", Units: "µm"},
			capabilities.XYSeries{Name: "up", X: []float64{90, 95, 100}, Y: []float64{41, 38, 44}}, capabilities.XYSeries{Name: "down", X: []float64{100, 90}, Y: []float64{45, 40}}),
		capabilities.NewTable("reads", []capabilities.Column{{Name: "channel"}, {Name: "value"}, {Name: "units"}},
			[]any{"SR:DCCT", 500.2, "mA"}, []any{"SR:VAC", nil, "Torr"}),
		capabilities.NewTable("empty", []capabilities.Column{{Name: "channel"}}),
		capabilities.NewFigure("plot", "image/png", png, "a plot"),
		capabilities.NewFigure("svg", "image/svg+xml", []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`), ""),
		capabilities.NewFigureURL("remote", "", "https://example.org/p.png", ""),
		capabilities.NewLink("logbook", "https://logbook.example.org/entry/42"),
	} {
		if err := a.Validate(); err != nil {
			t.Errorf("%s %q: %v", a.Kind, a.Title, err)
		}
		// JSON round trip keeps it valid (what a checkpoint does to it).
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var back capabilities.Artifact
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := back.Validate(); err != nil {
			t.Errorf("%s %q after JSON: %v", a.Kind, a.Title, err)
		}
	}
}

func TestArtifactValidateNamesTheProblem(t *testing.T) {
	good := capabilities.Series{Name: "A", TimesMs: []int64{1, 2}, Values: []float64{1, 2}}
	cols := []capabilities.Column{{Name: "a"}, {Name: "b"}}
	xa, ya := capabilities.Axis{Label: "position", Units: "m"}, capabilities.Axis{Label: "orbit", Units: "mm"}
	cases := []struct {
		name string
		a    capabilities.Artifact
		want string
	}{
		{"lengths disagree", capabilities.NewTimeSeries("", capabilities.Series{Name: "SR:X", TimesMs: []int64{1, 2, 3}, Values: []float64{1, 2}}), `series "SR:X" has 3 times and 2 values`},
		{"NaN", capabilities.NewTimeSeries("", capabilities.Series{Name: "SR:X", TimesMs: []int64{1}, Values: []float64{math.NaN()}}), `value[0] is NaN`},
		{"Inf", capabilities.NewTimeSeries("", capabilities.Series{Name: "SR:X", TimesMs: []int64{1}, Values: []float64{math.Inf(1)}}), `value[0] is +Inf`},
		{"time goes back", capabilities.NewTimeSeries("", capabilities.Series{Name: "SR:X", TimesMs: []int64{5, 4}, Values: []float64{1, 2}}), `times_ms[1] is before times_ms[0]`},
		{"no series", capabilities.NewTimeSeries("t"), "no series"},
		{"unnamed series", capabilities.NewTimeSeries("", capabilities.Series{TimesMs: []int64{}, Values: []float64{}}), "series[0] has no name"},
		{"duplicate series", capabilities.NewTimeSeries("", good, good), `two series named "A"`},
		{"xy lengths disagree", capabilities.NewXY("", xa, ya, capabilities.XYSeries{Name: "s", X: []float64{1, 2}, Y: []float64{1}}), `xy series "s" has 2 x and 1 y values`},
		{"xy NaN x", capabilities.NewXY("", xa, ya, capabilities.XYSeries{Name: "s", X: []float64{math.NaN()}, Y: []float64{1}}), `xy series "s" x[0] is NaN`},
		{"xy Inf y", capabilities.NewXY("", xa, ya, capabilities.XYSeries{Name: "s", X: []float64{1, 2}, Y: []float64{1, math.Inf(-1)}}), `xy series "s" y[1] is -Inf`},
		{"xy unlabelled axis", capabilities.NewXY("", capabilities.Axis{Units: "m"}, ya, capabilities.XYSeries{Name: "s"}), "xy axes need labels"},
		{"xy no series", capabilities.NewXY("", xa, ya), "xy has no series"},
		{"xy duplicate series", capabilities.NewXY("", xa, ya, capabilities.XYSeries{Name: "s"}, capabilities.XYSeries{Name: "s"}), `xy has two series named "s"`},
		{"xy kind without xy", capabilities.Artifact{Kind: capabilities.ArtifactXY}, "kind xy without xy"},
		{"short row", capabilities.NewTable("", cols, []any{1}), "row[0] has 1 cells, the table has 2 columns"},
		{"bad cell", capabilities.NewTable("", cols, []any{1, map[string]int{}}), `row[0] column "b": a map[string]int cell`},
		{"NaN cell", capabilities.NewTable("", cols, []any{1, math.NaN()}), `column "b": the number NaN`},
		{"no columns", capabilities.NewTable("", nil), "no columns"},
		{"unnamed column", capabilities.NewTable("", []capabilities.Column{{Units: "A"}}), "column[0] has no name"},
		{"figure without data", capabilities.NewFigure("", "image/png", nil, ""), "neither data nor url"},
		{"figure with both", capabilities.Artifact{Kind: capabilities.ArtifactFigure, Figure: &capabilities.Figure{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n"), URL: "https://x.org/a.png"}}, "both data and url"},
		{"unknown media type", capabilities.NewFigure("", "image/bmp", []byte("BM"), ""), `media_type "image/bmp"`},
		{"mislabelled image", capabilities.NewFigure("", "image/png", []byte("GIF89a...."), ""), "figure data is not image/png"},
		{"script link", capabilities.NewLink("x", "javascript:alert(1)"), "not an absolute http(s) address"},
		{"relative link", capabilities.NewLink("x", "/logbook/1"), "not an absolute http(s) address"},
		{"data figure url", capabilities.NewFigureURL("", "", "data:image/png;base64,AAAA", ""), "not an absolute http(s) address"},
		{"no kind", capabilities.Artifact{}, "no kind"},
		{"unknown kind", capabilities.Artifact{Kind: "chart"}, `unknown kind "chart"`},
		{"kind without payload", capabilities.Artifact{Kind: capabilities.ArtifactTable}, "kind table without table"},
		{"two payloads", capabilities.Artifact{Kind: capabilities.ArtifactLink, Link: &capabilities.Link{URL: "https://x.org"}, Table: &capabilities.Table{}}, "more than one"},
	}
	for _, c := range cases {
		err := c.a.Validate()
		if err == nil || !errors.Is(err, capabilities.ErrInvalidArtifact) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want an invalid-artifact error containing %q", c.name, err, c.want)
		}
	}
	omitted := capabilities.Artifact{Kind: capabilities.ArtifactTimeSeries, Omitted: "too large"}
	if err := omitted.Validate(); err != nil {
		t.Errorf("an omitted artifact is valid: %v", err)
	}
}

func TestOutputWithKeepsTheCallersSlice(t *testing.T) {
	base := capabilities.Result("T", 1, "one")
	base.Artifacts = make([]capabilities.Artifact, 1, 4)
	a := base.With(capabilities.NewLink("a", "https://a.org"))
	b := base.With(capabilities.NewLink("b", "https://b.org"))
	if len(a.Artifacts) != 2 || len(b.Artifacts) != 2 || a.Artifacts[1].Title != "a" || b.Artifacts[1].Title != "b" {
		t.Fatalf("With shares the backing array: %+v %+v", a.Artifacts, b.Artifacts)
	}
}
