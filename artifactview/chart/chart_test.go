package chart_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/artifactview/chart"
	"github.com/capgraph/capgraph/capabilities"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func series(name, units string, n int, f func(i int) float64) capabilities.Series {
	s := capabilities.Series{Name: name, Units: units}
	for i := range n {
		s.Add(t0.Add(time.Duration(i)*time.Minute), f(i))
	}
	return s
}

// lines returns the point counts of the SVG's stroked, unfilled paths with
// more than two points (the data lines; axes and ticks have two).
func lines(t *testing.T, svg []byte) []int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var out []int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			var d, style string
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "d":
					d = a.Value
				case "style":
					style = a.Value
				}
			}
			if n := strings.Count(d, "L") + 1; n > 2 && strings.Contains(style, "fill:none") {
				out = append(out, n)
			}
		}
	}
}

func TestDrawSVGAndPNG(t *testing.T) {
	a := capabilities.NewTimeSeries("RF <b>&</b> \"voltage\"",
		series("SR:RF:CAV1:VOLT", "kV", 121, func(i int) float64 { return 4.8 + math.Sin(float64(i)/10)/100 }),
		series("SR:RF:CAV2:VOLT", "kV", 121, func(i int) float64 { return 4.7 }), // constant
		series("SR:DCCT", "mA", 60, func(i int) float64 { return 500 - float64(i)/10 }),
		series("<script>alert(1)</script>", "", 1, func(int) float64 { return 7 }), // one point, no units
		capabilities.Series{Name: "SR:EMPTY", Units: "kV", TimesMs: []int64{}, Values: []float64{}},
	)
	svg, err := chart.Draw(a, chart.SVG)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg, []byte("<script")) || bytes.Contains(svg, []byte("<b>")) {
		t.Fatal("text is not escaped")
	}
	got := lines(t, svg)
	want := map[int]int{121: 2, 60: 1}
	for _, n := range got {
		want[n]--
	}
	if want[121] != 0 || want[60] != 0 {
		t.Fatalf("data lines of %v points, want two of 121 and one of 60", got)
	}
	for _, name := range []string{"SR:RF:CAV1:VOLT", "SR:DCCT", "SR:EMPTY (no data)", "kV", "mA", "time (UTC)", "08:00"} {
		if !bytes.Contains(svg, []byte(">"+name+"<")) {
			t.Errorf("the SVG shows no %q", name)
		}
	}
	// One panel per unit: kV, mA and none; the time axis is labelled once.
	if n := bytes.Count(svg, []byte(">time (UTC)<")); n != 1 {
		t.Errorf("%d time axis labels", n)
	}
	p, err := chart.Draw(a, chart.PNG)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 3*300 {
		t.Errorf("PNG %v: want about 960 wide and a panel per unit", b)
	}
}

// A series longer than MaxPoints is drawn reduced, keeping its extremes
// (a spike stays visible); the artifact keeps every sample.
func TestDrawReducesLongSeriesKeepingExtremes(t *testing.T) {
	n := 50_000
	s := series("SR:LONG", "A", n, func(i int) float64 {
		switch i {
		case 31_337:
			return 1000 // a spike
		case 7_001:
			return -1000 // a dip
		}
		return math.Sin(float64(i) / 500)
	})
	svg, err := chart.Draw(capabilities.NewTimeSeries("", s), chart.SVG)
	if err != nil {
		t.Fatal(err)
	}
	got := lines(t, svg)
	if len(got) != 1 || got[0] > chart.MaxPoints || got[0] < chart.MaxPoints/2 {
		t.Fatalf("lines %v, want one of at most %d points", got, chart.MaxPoints)
	}
	if !bytes.Contains(svg, []byte(">1000<")) || !bytes.Contains(svg, []byte(">-1000<")) {
		t.Error("the spike and the dip set the value axis (ticks at ±1000)")
	}
}

func TestDrawRefusesWhatIsNotATimeSeries(t *testing.T) {
	if _, err := chart.Draw(capabilities.NewLink("x", "https://x.org"), chart.SVG); !errors.Is(err, chart.ErrNotChart) {
		t.Errorf("a link: %v", err)
	}
	bad := capabilities.NewTimeSeries("", capabilities.Series{Name: "A", TimesMs: []int64{1}, Values: []float64{}})
	if _, err := chart.Draw(bad, chart.SVG); !errors.Is(err, capabilities.ErrInvalidArtifact) {
		t.Errorf("an invalid series: %v", err)
	}
	if _, err := chart.Draw(capabilities.NewTimeSeries("", series("A", "", 3, func(int) float64 { return 1 })), "gif"); err == nil {
		t.Error("an unknown format")
	}
}

// Tick labels are round times and values, with enough decimals to differ.
func TestTickLabels(t *testing.T) {
	for _, c := range []struct {
		span  time.Duration
		label *regexp.Regexp
	}{
		{2 * time.Minute, regexp.MustCompile(`>08:0[01]:[0-9]0<`)},
		{2 * time.Hour, regexp.MustCompile(`>09:[0-5][05]<`)},
		{3 * 24 * time.Hour, regexp.MustCompile(`>03-0[1-4] [0-2][0-9]:00<`)},
		{60 * 24 * time.Hour, regexp.MustCompile(`>2026-0[3-4]-[0-3][0-9]<`)},
	} {
		s := capabilities.Series{Name: "A", Units: "kV"}
		s.Add(t0, 4.79)
		s.Add(t0.Add(c.span/2), 4.81)
		s.Add(t0.Add(c.span), 4.80)
		svg, err := chart.Draw(capabilities.NewTimeSeries("", s), chart.SVG)
		if err != nil {
			t.Fatal(err)
		}
		if !c.label.Match(svg) {
			t.Errorf("span %s: no time label like %s", c.span, c.label)
		}
		// 4.79 to 4.81 in steps of 0.005 needs three decimals.
		for _, v := range []string{">4.790<", ">4.800<", ">4.810<"} {
			if !bytes.Contains(svg, []byte(v)) {
				t.Errorf("span %s: no value label %s", c.span, v)
			}
		}
	}
}

func BenchmarkDraw(b *testing.B) {
	var ss []capabilities.Series
	for c := range 4 {
		ss = append(ss, series("SR:RF:CAV"+string(rune('1'+c))+":VOLT", "kV", 121, func(i int) float64 { return 600 + math.Sin(float64(i)/10+float64(c)) }))
	}
	a := capabilities.NewTimeSeries("RF cavity voltage, last 2 hours", ss...)
	for _, f := range []chart.Format{chart.SVG, chart.PNG} {
		b.Run(string(f), func(b *testing.B) {
			for b.Loop() {
				if _, err := chart.Draw(a, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// An x–y artifact (a profile: the orbit against the position along the
// ring) is one panel: a line per series through its points, both axes
// labelled with their units, positions as numbers (not times).
func TestDrawXY(t *testing.T) {
	var x, h, v []float64
	for i := range 48 {
		x = append(x, 5.5+11*float64(i))
		h = append(h, 0.01*math.Sin(float64(i)/5))
		v = append(v, 0.004*math.Cos(float64(i)/7))
	}
	a := capabilities.NewXY("Orbit along the ring", capabilities.Axis{Label: "position along the ring", Units: "m"},
		capabilities.Axis{Label: "beam position", Units: "mm"},
		capabilities.XYSeries{Name: "horizontal", X: x, Y: h}, capabilities.XYSeries{Name: "vertical", X: x, Y: v})
	svg, err := chart.Draw(a, chart.SVG)
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(t, svg); len(got) != 2 || got[0] != 48 || got[1] != 48 {
		t.Fatalf("data lines %v, want two of 48 points", got)
	}
	for _, label := range []string{"Orbit along the ring", "position along the ring (m)", "beam position (mm)", "horizontal", "vertical", "400"} {
		if !bytes.Contains(svg, []byte(">"+label+"<")) {
			t.Errorf("the SVG shows no %q", label)
		}
	}
	if bytes.Contains(svg, []byte("time (UTC)")) {
		t.Error("an x–y chart has a time axis")
	}
	if _, err := chart.Draw(capabilities.NewXY("bad", capabilities.Axis{}, capabilities.Axis{Label: "y"}, capabilities.XYSeries{Name: "s", X: []float64{1}, Y: []float64{2}}), chart.PNG); !errors.Is(err, capabilities.ErrInvalidArtifact) {
		t.Errorf("an x axis without a label: %v", err)
	}
	p, err := chart.Draw(a, chart.PNG)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(p)); err != nil {
		t.Fatal(err)
	}
}
