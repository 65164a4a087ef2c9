package artifactview_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/artifactview"
	"github.com/capgraph/capgraph/capabilities"
)

var t0 = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)

func rf(n int) capabilities.Series {
	s := capabilities.Series{Name: "SR:RF:CAV1:VOLT", Units: "kV"}
	for i := range n {
		s.Add(t0.Add(time.Duration(i)*time.Minute), 4.8+float64(i%10)/1000)
	}
	return s
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{
		92: "92", -3: "-3", 4.80012345: "4.80012", 500.2: "500.2", 0.000123456: "0.000123456",
		1.23e-9: "1.23e-09", 6.02e23: "6.02e+23", -0.5: "-0.5", 0: "0", 1234567.891: "1234568",
	} {
		if got := artifactview.Number(v); got != want {
			t.Errorf("Number(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestMarkdownTimeSeries(t *testing.T) {
	a := capabilities.NewTimeSeries("RF cavity voltage", rf(120), capabilities.Series{Name: "SR:EMPTY", Units: "kV", TimesMs: []int64{}, Values: []float64{}})
	a.ID = "t1.p1.s1.0"
	md := artifactview.Markdown([]capabilities.Artifact{a}, func(x capabilities.Artifact) string {
		return "https://cg.example.org/v1/artifacts/th/" + x.ID + ".svg?exp=1&sig=x"
	})
	for _, want := range []string{
		"**RF cavity voltage**",
		"| channel | points | min | max | last | units |\n| --- | ---: | ---: | ---: | ---: | --- |",
		"| SR:RF:CAV1:VOLT | 120 | 4.8 | 4.809 | 4.809 | kV |",
		"| SR:EMPTY | 0 |  |  |  | kV |",
		"2026-03-01 08:00:00 to 2026-03-01 09:59:00 UTC",
		"![RF cavity voltage](https://cg.example.org/v1/artifacts/th/t1.p1.s1.0.svg?exp=1&sig=x)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if md := artifactview.Markdown([]capabilities.Artifact{a}, nil); strings.Contains(md, "![") {
		t.Errorf("no image without an address:\n%s", md)
	}
}

// Text from a capability (or a tool of an MCP server) cannot break out of
// its cell, inject HTML or links, or hide the image.
func TestMarkdownEscapes(t *testing.T) {
	tbl := capabilities.NewTable("Reads | <img src=x onerror=alert(1)> [click](javascript:alert(1))",
		[]capabilities.Column{{Name: "channel|x"}, {Name: "value", Units: "mA"}, {Name: "note"}},
		[]any{"SR:DCCT", 500.25, "line one\nline two | *bold* <script>"},
		[]any{"SR_X", nil, true})
	md := artifactview.Markdown([]capabilities.Artifact{tbl}, nil)
	for _, bad := range []string{"<img", "<script", "click](javascript:", "line one\n"} {
		if strings.Contains(md, bad) {
			t.Errorf("Markdown contains %q:\n%s", bad, md)
		}
	}
	for _, want := range []string{
		`| channel\|x | value (mA) | note |`,
		"| --- | ---: | --- |",
		`| SR:DCCT | 500.25 | line one line two \| \*bold\* &lt;script&gt; |`,
		`| SR\_X |  | true |`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	link := capabilities.NewLink("Logbook ] (entry)", "https://logbook.example.org/e?id=4 2)")
	if md := artifactview.Markdown([]capabilities.Artifact{link}, nil); md != "[Logbook \\] (entry)](https://logbook.example.org/e?id=4%202%29)\n" {
		t.Errorf("link %q", md)
	}
}

func TestMarkdownTableRowsAreBounded(t *testing.T) {
	var rows [][]any
	for i := range artifactview.MaxRows + 12 {
		rows = append(rows, []any{fmt.Sprintf("ch%d", i), float64(i)})
	}
	md := artifactview.Markdown([]capabilities.Artifact{capabilities.NewTable("", []capabilities.Column{{Name: "channel"}, {Name: "value"}}, rows...)}, nil)
	if n := strings.Count(md, "\n| ch"); n != artifactview.MaxRows {
		t.Errorf("%d rows shown, want %d", n, artifactview.MaxRows)
	}
	if !strings.Contains(md, "*… and 12 more rows*") {
		t.Errorf("the rest is not counted:\n%s", md)
	}
}

func TestMarkdownFigureLinkOmitted(t *testing.T) {
	fig := capabilities.NewFigure("Beam profile", "image/png", []byte("\x89PNG\r\n\x1a\nxx"), "the beam's profile")
	fig.ID = "t1.p1.s0.0"
	remote := capabilities.NewFigureURL("Camera", "", "https://cam.example.org/now.jpg", "")
	om := capabilities.Artifact{ID: "t1.p1.s0.1", Kind: capabilities.ArtifactTimeSeries, Title: "Long history", Omitted: "This timeseries (3.2 MiB) was left out."}
	md := artifactview.Markdown([]capabilities.Artifact{fig, remote, om}, func(a capabilities.Artifact) string { return "https://cg/" + a.ID + ".png" })
	for _, want := range []string{
		"**Beam profile**\n\n![the beam's profile](https://cg/t1.p1.s0.0.png)",
		"**Camera**\n\n![Camera](https://cam.example.org/now.jpg)",
		"**Long history**\n\n*This timeseries (3.2 MiB) was left out.*",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestTextForTheTerminal(t *testing.T) {
	ts := capabilities.NewTimeSeries("RF cavity voltage", rf(120), capabilities.Series{Name: "SR:RF:CAV2:VOLT", Units: "kV", TimesMs: []int64{}, Values: []float64{}})
	tbl := capabilities.NewTable("Channel values", []capabilities.Column{{Name: "channel"}, {Name: "value"}, {Name: "units"}, {Name: "status"}},
		[]any{"SR:DCCT:CURRENT", 500.2, "mA", "ok"}, []any{"SR:C03:VAC:GAUGE1", 1.2e-9, "Torr", "ok"})
	out := artifactview.Text([]capabilities.Artifact{ts, tbl, capabilities.NewLink("Logbook", "https://lb.example.org/1")}, 100)
	want := strings.Join([]string{
		"RF cavity voltage",
		// Buckets of 5 samples of a saw-tooth of 10: low, high, low, …
		"  SR:RF:CAV1:VOLT  ▁█▁█▁█▁█▁█▁█▁█▁█▁█▁█▁█▁█  min 4.8  max 4.809  last 4.809 kV  (120 points)",
		"  SR:RF:CAV2:VOLT  (no data)",
		"  2026-03-01 08:00:00 to 2026-03-01 09:59:00 UTC",
		"Channel values",
		"  channel             value units status",
		"  SR:DCCT:CURRENT     500.2 mA    ok",
		"  SR:C03:VAC:GAUGE1 1.2e-09 Torr  ok",
		"Logbook",
		"  https://lb.example.org/1",
		"",
	}, "\n")
	if out != want {
		t.Errorf("Text:\n%s\nwant:\n%s", out, want)
	}
	for _, line := range strings.Split(artifactview.Text([]capabilities.Artifact{ts, tbl}, 40), "\n") {
		if n := len([]rune(line)); n > 40 {
			t.Errorf("a line of %d characters at width 40: %q", n, line)
		}
	}
}

func TestSparkline(t *testing.T) {
	if got := artifactview.Sparkline([]float64{1, 2, 3, 4, 5, 6, 7, 8}, 8); got != "▁▂▃▄▅▆▇█" {
		t.Errorf("rising: %q", got)
	}
	if got := artifactview.Sparkline([]float64{5, 5, 5}, 10); got != "▅▅▅" {
		t.Errorf("flat, fewer samples than width: %q", got)
	}
	if got := artifactview.Sparkline(nil, 10); got != "" {
		t.Errorf("empty: %q", got)
	}
}

func orbit() capabilities.Artifact {
	h := capabilities.XYSeries{Name: "horizontal"}
	for i := range 48 {
		h.X = append(h.X, 5.5+11*float64(i))
		h.Y = append(h.Y, float64(i%7-3)/1000)
	}
	a := capabilities.NewXY("Orbit along the ring", capabilities.Axis{Label: "position", Units: "m"}, capabilities.Axis{Label: "beam position", Units: "mm"},
		h, capabilities.XYSeries{Name: "vertical", X: []float64{}, Y: []float64{}})
	a.ID = "t1.p1.s2.0"
	return a
}

// An x–y artifact: a table of its series with the axes' labels and units,
// and its picture; in the terminal a line per series.
func TestXYMarkdownAndText(t *testing.T) {
	a := orbit()
	md := artifactview.Markdown([]capabilities.Artifact{a}, func(x capabilities.Artifact) string { return "https://cg.example.org/" + x.ID + ".svg" })
	for _, want := range []string{
		"**Orbit along the ring**",
		"| series | points | position from (m) | position to (m) | beam position min (mm) | beam position max (mm) |",
		"| horizontal | 48 | 5.5 | 522.5 | -0.003 | 0.003 |",
		"| vertical | 0 |  |  |  |  |",
		"![Orbit along the ring](https://cg.example.org/t1.p1.s2.0.svg)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	txt := artifactview.Text([]capabilities.Artifact{a}, 120)
	for _, want := range []string{"Orbit along the ring\n", "beam position -0.003 to 0.003 mm  (48 points, position 5.5 to 522.5 m)", "vertical    (no data)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("Text lacks %q:\n%s", want, txt)
		}
	}
	if !strings.ContainsAny(txt, "▁▂▃▄▅▆▇█") {
		t.Errorf("no sparkline:\n%s", txt)
	}
}
