// Package chart draws a time-series or x–y artifact as an SVG or PNG image, for
// frontends that show pictures but run no script (a Markdown image in a
// Chat Completions answer). It uses gonum.org/v1/plot, which embeds its
// fonts: about 8 MB of binary, so only the server imports this package
// (internal/layers checks it); the page draws its charts in the browser.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/capgraph/capgraph/capabilities"
)

// Format is an image format.
type Format string

const (
	SVG Format = "svg"
	PNG Format = "png"
)

// MediaType returns the format's media type.
func (f Format) MediaType() string {
	if f == PNG {
		return "image/png"
	}
	return "image/svg+xml"
}

// MaxPoints bounds the points drawn per series: a longer series is reduced
// to the first, the last, and each bucket's lowest and highest sample, so
// every spike stays visible and an image stays small. The artifact keeps
// every sample.
const MaxPoints = 2000

// Size of the picture: the width, and the height of each panel (one panel
// per unit; series without units share one).
const (
	width       = 8 * vg.Inch
	panelHeight = 3 * vg.Inch
	titleHeight = 0.4 * vg.Inch
	dpi         = 120
)

// ErrNotChart: only time series and x–y artifacts are drawn.
var ErrNotChart = errors.New("chart: the artifact is neither a time series nor an x–y series")

// palette is Okabe and Ito's, distinguishable with the common colour
// vision deficiencies, then repeated with dashes.
var palette = []color.RGBA{
	{0, 114, 178, 255}, {213, 94, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {230, 159, 0, 255}, {0, 0, 0, 255}, {240, 228, 66, 255},
}

// Draw renders a chart artifact in the format. A time series: one panel
// per unit (stacked, sharing the time axis), each series a line in its own
// colour, named in its panel's legend, units on the value axis, times in
// UTC. An x–y artifact: one panel, each series a line through its points
// in the order measured, both axes labelled with their units.
func Draw(a capabilities.Artifact, f Format) ([]byte, error) {
	var (
		plots [][]*plot.Plot
		title = a.Title
	)
	switch {
	case a.Kind == capabilities.ArtifactTimeSeries && a.TimeSeries != nil:
		if err := a.Validate(); err != nil {
			return nil, err
		}
		groups := byUnits(a.TimeSeries.Series)
		lo, hi := timeRange(a.TimeSeries.Series)
		colour := 0
		for i, g := range groups {
			p, err := panel(g, lo, hi, i == len(groups)-1, &colour)
			if err != nil {
				return nil, err
			}
			plots = append(plots, []*plot.Plot{p})
		}
		if title == "" {
			title = names(a.TimeSeries.Series)
		}
	case a.Kind == capabilities.ArtifactXY && a.XY != nil:
		if err := a.Validate(); err != nil {
			return nil, err
		}
		p, err := xyPanel(a.XY)
		if err != nil {
			return nil, err
		}
		plots = [][]*plot.Plot{{p}}
		if title == "" {
			title = a.XY.Y.Label + " against " + a.XY.X.Label
		}
	default:
		return nil, ErrNotChart
	}
	height := vg.Length(len(plots))*panelHeight + titleHeight
	var c vg.CanvasWriterTo
	switch f {
	case SVG:
		c = vgsvg.New(width, height)
	case PNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))}
	default:
		return nil, fmt.Errorf("chart: unknown format %q", f)
	}
	dc := draw.New(c)
	if f == SVG {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
	}
	sty := draw.TextStyle{Color: color.Black, Font: font.From(sansFont, 13), XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	dc.FillText(sty, vg.Point{X: width / 2, Y: height - 0.08*vg.Inch}, title)
	dc.Max.Y -= titleHeight
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: 0.1 * vg.Inch}
	for i, row := range plot.Align(plots, tiles, dc) {
		plots[i][0].Draw(row[0])
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("chart: write %s: %w", f, err)
	}
	return buf.Bytes(), nil
}

var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// group is the series sharing one unit.
type group struct {
	units  string
	series []capabilities.Series
}

// byUnits groups series by units, in the order the units first appear.
func byUnits(ss []capabilities.Series) []group {
	var out []group
	for _, s := range ss {
		i := slices.IndexFunc(out, func(g group) bool { return g.units == s.Units })
		if i < 0 {
			out = append(out, group{units: s.Units})
			i = len(out) - 1
		}
		out[i].series = append(out[i].series, s)
	}
	return out
}

func timeRange(ss []capabilities.Series) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		if n := len(s.TimesMs); n > 0 {
			lo, hi = math.Min(lo, float64(s.TimesMs[0])/1000), math.Max(hi, float64(s.TimesMs[n-1])/1000)
		}
	}
	if math.IsInf(lo, 0) {
		now := float64(time.Now().Unix())
		return now - 3600, now
	}
	if lo == hi {
		lo, hi = lo-30, hi+30
	}
	return lo, hi
}

func panel(g group, lo, hi float64, last bool, colour *int) (*plot.Plot, error) {
	p := plot.New()
	for _, t := range []*plot.Axis{&p.X, &p.Y} {
		t.Label.TextStyle.Font = font.From(sansFont, 11)
		t.Tick.Label.Font = font.From(sansFont, 9)
	}
	p.Legend.TextStyle.Font = font.From(sansFont, 9)
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Label.Text = g.units
	p.X.Min, p.X.Max = lo, hi
	p.X.Tick.Marker = timeTicks{}
	p.Y.Tick.Marker = valueTicks{}
	if last {
		p.X.Label.Text = "time (UTC)"
	} else {
		p.X.Tick.Label.Color = color.Transparent
	}
	p.Add(plotter.NewGrid())
	for _, s := range g.series {
		c := palette[*colour%len(palette)]
		dashed := *colour >= len(palette)
		*colour++
		pts := points(s)
		if len(pts) == 0 {
			p.Legend.Add(s.Name + " (no data)")
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("chart: series %s: %w", s.Name, err)
		}
		l.Color, l.Width = c, vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		if len(pts) < 30 {
			// Few samples: mark each, so a single one is seen at all.
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("chart: series %s: %w", s.Name, err)
			}
			sc.Color, sc.Radius, sc.Shape = c, vg.Points(2), draw.CircleGlyph{}
			p.Add(sc)
		}
		p.Legend.Add(s.Name, l)
	}
	headroom(p, g.series)
	return p, nil
}

// axisLabel is an x–y axis's label with its units: "position (m)".
func axisLabel(a capabilities.Axis) string {
	if a.Units == "" {
		return a.Label
	}
	return a.Label + " (" + a.Units + ")"
}

// xyPanel draws an x–y artifact: a line (and, for few points, a mark at
// each) per series.
func xyPanel(xy *capabilities.XY) (*plot.Plot, error) {
	p := plot.New()
	for _, t := range []*plot.Axis{&p.X, &p.Y} {
		t.Label.TextStyle.Font = font.From(sansFont, 11)
		t.Tick.Label.Font = font.From(sansFont, 9)
		t.Tick.Marker = valueTicks{}
	}
	p.Legend.TextStyle.Font = font.From(sansFont, 9)
	p.Legend.Top, p.Legend.Left = true, true
	p.X.Label.Text, p.Y.Label.Text = axisLabel(xy.X), axisLabel(xy.Y)
	p.Add(plotter.NewGrid())
	var values []capabilities.Series // the y values, for headroom
	for i, s := range xy.Series {
		c := palette[i%len(palette)]
		values = append(values, capabilities.Series{Values: s.Y})
		if len(s.X) == 0 {
			p.Legend.Add(s.Name + " (no data)")
			continue
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			pts[j] = plotter.XY{X: s.X[j], Y: s.Y[j]}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("chart: series %s: %w", s.Name, err)
		}
		l.Color, l.Width = c, vg.Points(1.5)
		if i >= len(palette) {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		if len(pts) <= 100 {
			// A scan's points are measurements: mark each.
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("chart: series %s: %w", s.Name, err)
			}
			sc.Color, sc.Radius, sc.Shape = c, vg.Points(2), draw.CircleGlyph{}
			p.Add(sc)
		}
		p.Legend.Add(s.Name, l)
	}
	headroom(p, values)
	return p, nil
}

// headroom raises the value axis above the data, so the legend (top left,
// a line per series) covers no sample.
func headroom(p *plot.Plot, ss []capabilities.Series) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, v := range s.Values {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.01, 1e-9)
		lo -= span / 2
	}
	// Each legend line takes about a twentieth of a panel's height.
	f := 0.05 * float64(len(ss)+1)
	p.Y.Min, p.Y.Max = lo-span*0.03, hi+span*f/(1-f)
}

// points are the series' samples to draw (times in Unix seconds), reduced
// to MaxPoints.
func points(s capabilities.Series) plotter.XYs {
	n := len(s.Values)
	xy := func(i int) plotter.XY { return plotter.XY{X: float64(s.TimesMs[i]) / 1000, Y: s.Values[i]} }
	if n <= MaxPoints {
		out := make(plotter.XYs, n)
		for i := range n {
			out[i] = xy(i)
		}
		return out
	}
	buckets := (MaxPoints - 2) / 2
	out := make(plotter.XYs, 0, MaxPoints)
	out = append(out, xy(0))
	for b := range buckets {
		from, to := 1+b*(n-2)/buckets, 1+(b+1)*(n-2)/buckets
		if from >= to {
			continue
		}
		lo, hi := from, from
		for i := from; i < to; i++ {
			if s.Values[i] < s.Values[lo] {
				lo = i
			}
			if s.Values[i] > s.Values[hi] {
				hi = i
			}
		}
		out = append(out, xy(min(lo, hi)))
		if lo != hi {
			out = append(out, xy(max(lo, hi)))
		}
	}
	return append(out, xy(n-1))
}

func names(ss []capabilities.Series) string {
	var ns []string
	for _, s := range ss {
		ns = append(ns, s.Name)
	}
	if len(ns) > 3 {
		ns = append(ns[:3], fmt.Sprintf("and %d more", len(ns)-3))
	}
	return strings.Join(ns, ", ")
}

// valueTicks marks 4 to 8 round values (1, 2 or 5 times a power of ten
// apart), labelled with as many decimals as the step needs: gonum's
// default ticker labels a narrow range (4.79 to 4.81) as 4.8, 4.8, 4.8.
type valueTicks struct{}

func (valueTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		if v == 0 {
			v = 0 // no "-0"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		if len(ticks) > 20 {
			break
		}
	}
	return ticks
}

// timeTicks marks round times (every minute, 5 minutes, hour, day, …) so
// that the axis shows 4 to 8 labels, in UTC.
type timeTicks struct{}

var tickSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour, 14 * 24 * time.Hour, 28 * 24 * time.Hour,
}

func (timeTicks) Ticks(lo, hi float64) []plot.Tick {
	span := time.Duration((hi - lo) * float64(time.Second))
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	layout := "15:04"
	switch {
	case step < time.Minute:
		layout = "15:04:05"
	case step >= 24*time.Hour:
		layout = "2006-01-02"
	case span > 24*time.Hour:
		layout = "01-02 15:04"
	}
	start := time.Unix(int64(math.Ceil(lo)), 0).UTC().Truncate(step)
	if float64(start.Unix()) < lo {
		start = start.Add(step)
	}
	var ticks []plot.Tick
	for t := start; float64(t.Unix()) <= hi; t = t.Add(step) {
		ticks = append(ticks, plot.Tick{Value: float64(t.Unix()), Label: t.Format(layout)})
		if len(ticks) > 50 {
			break
		}
	}
	return ticks
}
