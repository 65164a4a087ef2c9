// Package artifactview writes artifacts (capabilities.Artifact) as text for
// the frontends that show no script-driven page: Markdown for chat clients
// (Chat Completions, Responses) and compact plain text for the terminal.
// It imports only the standard library and capabilities; drawing a time
// series as an image is package chart's.
package artifactview

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/capgraph/capgraph/capabilities"
)

// MaxRows bounds the rows a table shows in Markdown and in the terminal;
// the rest are counted ("… and 12 more rows"). The artifact keeps them all.
const MaxRows = 50

// Number formats a value for people: up to 6 significant digits, no
// exponent between 1e-4 and 1e9, integers without a decimal point.
func Number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	a := math.Abs(v)
	if a >= 1e-4 && a < 1e9 {
		s := strconv.FormatFloat(v, 'f', max(0, 5-int(math.Floor(math.Log10(a)))), 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// Cell formats a table cell: numbers with Number, nil as empty.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return Number(x)
	case float32:
		return Number(float64(x))
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// Stats summarises a series.
type Stats struct {
	Count          int
	Min, Max, Last float64
	From, To       time.Time
}

// SeriesStats returns the series' statistics (zero for no samples).
func SeriesStats(s capabilities.Series) Stats {
	n := len(s.Values)
	if n == 0 || len(s.TimesMs) != n {
		return Stats{}
	}
	st := Stats{Count: n, Min: math.Inf(1), Max: math.Inf(-1), Last: s.Values[n-1], From: s.Time(0), To: s.Time(n - 1)}
	for _, v := range s.Values {
		st.Min, st.Max = math.Min(st.Min, v), math.Max(st.Max, v)
	}
	return st
}

// ImageURL gives the address of an artifact's picture (a time series
// plotted, a figure's image), or "" when there is none to link.
type ImageURL func(a capabilities.Artifact) string

// Markdown writes the artifacts as Markdown, each under its title: a time
// series as a table of its channels (points, min, max, last, units) and
// the picture imageURL names; an x–y artifact as a table of its series
// (points, x from and to, y min and max, with the axes' units) and its
// picture; a table as a table (MaxRows rows); a figure
// as an image; a link as a link; an omitted artifact as its note.
func Markdown(arts []capabilities.Artifact, imageURL ImageURL) string {
	var b strings.Builder
	for _, a := range arts {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if a.Title != "" && a.Kind != capabilities.ArtifactLink {
			fmt.Fprintf(&b, "**%s**\n\n", inline(a.Title))
		}
		switch {
		case a.Omitted != "":
			fmt.Fprintf(&b, "*%s*\n", inline(a.Omitted))
		case a.TimeSeries != nil:
			rows := [][]string{}
			for _, s := range a.TimeSeries.Series {
				st := SeriesStats(s)
				if st.Count == 0 {
					rows = append(rows, []string{s.Name, "0", "", "", "", s.Units})
					continue
				}
				rows = append(rows, []string{s.Name, strconv.Itoa(st.Count), Number(st.Min), Number(st.Max), Number(st.Last), s.Units})
			}
			markdownTable(&b, []string{"channel", "points", "min", "max", "last", "units"}, []bool{false, true, true, true, true, false}, rows, 0)
			if span := seriesSpan(a.TimeSeries.Series); span != "" {
				fmt.Fprintf(&b, "\n%s\n", span)
			}
			if u := url(imageURL, a); u != "" {
				fmt.Fprintf(&b, "\n![%s](%s)\n", alt(a), u)
			}
		case a.XY != nil:
			rows := [][]string{}
			for _, s := range a.XY.Series {
				st := xyStats(s)
				if st.count == 0 {
					rows = append(rows, []string{s.Name, "0", "", "", "", ""})
					continue
				}
				rows = append(rows, []string{s.Name, strconv.Itoa(st.count), Number(st.xFrom), Number(st.xTo), Number(st.yMin), Number(st.yMax)})
			}
			markdownTable(&b, []string{"series", "points", axisHead(a.XY.X, "from"), axisHead(a.XY.X, "to"), axisHead(a.XY.Y, "min"), axisHead(a.XY.Y, "max")},
				[]bool{false, true, true, true, true, true}, rows, 0)
			if u := url(imageURL, a); u != "" {
				fmt.Fprintf(&b, "\n![%s](%s)\n", alt(a), u)
			}
		case a.Table != nil:
			heads := make([]string, len(a.Table.Columns))
			for i, c := range a.Table.Columns {
				heads[i] = c.Name
				if c.Units != "" {
					heads[i] += " (" + c.Units + ")"
				}
			}
			numeric := make([]bool, len(heads))
			for i := range numeric {
				numeric[i] = numericColumn(a.Table, i)
			}
			rows := make([][]string, 0, min(len(a.Table.Rows), MaxRows))
			for _, r := range a.Table.Rows[:min(len(a.Table.Rows), MaxRows)] {
				cells := make([]string, len(r))
				for i, c := range r {
					cells[i] = Cell(c)
				}
				rows = append(rows, cells)
			}
			markdownTable(&b, heads, numeric, rows, len(a.Table.Rows)-len(rows))
		case a.Figure != nil:
			u := a.Figure.URL
			if u == "" {
				u = url(imageURL, a)
			}
			if u != "" {
				fmt.Fprintf(&b, "![%s](%s)\n", alt(a), destination(u))
			} else {
				fmt.Fprintf(&b, "*(an image: %s)*\n", inline(a.Figure.MediaType))
			}
		case a.Link != nil:
			text := a.Title
			if text == "" {
				text = a.Link.URL
			}
			fmt.Fprintf(&b, "[%s](%s)\n", inline(text), destination(a.Link.URL))
		}
	}
	return b.String()
}

// axisHead is a column heading for an axis's statistic: "position from (m)".
func axisHead(a capabilities.Axis, what string) string {
	h := a.Label + " " + what
	if a.Units != "" {
		h += " (" + a.Units + ")"
	}
	return h
}

// xySummary summarises an x–y series (xyStats): its x range as measured (first to
// last) and its y extremes.
type xySummary struct {
	count      int
	xFrom, xTo float64
	yMin, yMax float64
}

func xyStats(s capabilities.XYSeries) xySummary {
	n := len(s.Y)
	if n == 0 || len(s.X) != n {
		return xySummary{}
	}
	st := xySummary{count: n, xFrom: s.X[0], xTo: s.X[n-1], yMin: math.Inf(1), yMax: math.Inf(-1)}
	for _, v := range s.Y {
		st.yMin, st.yMax = math.Min(st.yMin, v), math.Max(st.yMax, v)
	}
	return st
}

func url(f ImageURL, a capabilities.Artifact) string {
	if f == nil {
		return ""
	}
	return f(a)
}

func alt(a capabilities.Artifact) string {
	s := a.Title
	if a.Figure != nil && a.Figure.Alt != "" {
		s = a.Figure.Alt
	}
	if s == "" {
		s = string(a.Kind)
	}
	return inline(s)
}

// seriesSpan says the time range the series cover, in UTC.
func seriesSpan(ss []capabilities.Series) string {
	var from, to time.Time
	for _, s := range ss {
		st := SeriesStats(s)
		if st.Count == 0 {
			continue
		}
		if from.IsZero() || st.From.Before(from) {
			from = st.From
		}
		if st.To.After(to) {
			to = st.To
		}
	}
	if from.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s to %s UTC", from.Format("2006-01-02 15:04:05"), to.Format("2006-01-02 15:04:05"))
}

func numericColumn(t *capabilities.Table, col int) bool {
	seen := false
	for _, r := range t.Rows {
		switch r[col].(type) {
		case nil:
		case float64, float32, int, int64, int32, uint, uint64, uint32:
			seen = true
		default:
			return false
		}
	}
	return seen
}

func markdownTable(b *strings.Builder, heads []string, right []bool, rows [][]string, more int) {
	b.WriteString("|")
	for _, h := range heads {
		b.WriteString(" " + cellText(h) + " |")
	}
	b.WriteString("\n|")
	for i := range heads {
		if right[i] {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" --- |")
		}
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + cellText(c) + " |")
		}
		b.WriteString("\n")
	}
	if more > 0 {
		fmt.Fprintf(b, "\n*… and %d more rows*\n", more)
	}
}

// cellText makes text safe inside a Markdown table cell: one line, pipes
// escaped, no HTML.
func cellText(s string) string {
	return strings.ReplaceAll(inline(s), "|", `\|`)
}

// inline makes text safe as one line of Markdown: no line breaks, no HTML
// (a chat client may render tags), and the characters that would start
// emphasis, links or images escaped.
func inline(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '_', '[', ']', '!', '#':
			b.WriteRune('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// destination makes an address safe as a Markdown link destination.
func destination(u string) string {
	r := strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E", "\n", "", "\r", "")
	return r.Replace(u)
}

// Sparkline draws values as width block characters (▁ to █), each the
// mean of its share of the samples, scaled from the lowest to the highest.
func Sparkline(values []float64, width int) string {
	if len(values) == 0 || width <= 0 {
		return ""
	}
	width = min(width, len(values))
	means := make([]float64, width)
	for i := range width {
		from, to := i*len(values)/width, (i+1)*len(values)/width
		sum := 0.0
		for _, v := range values[from:to] {
			sum += v
		}
		means[i] = sum / float64(to-from)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range means {
		lo, hi = math.Min(lo, m), math.Max(hi, m)
	}
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	var b strings.Builder
	for _, m := range means {
		i := len(levels) / 2
		if hi > lo {
			i = int(math.Round((m - lo) / (hi - lo) * float64(len(levels)-1)))
		}
		b.WriteRune(levels[i])
	}
	return b.String()
}

// Text writes the artifacts for a terminal of the given width: a title
// line each; a time series as a line per channel (sparkline, min, max,
// last, units, points); an x–y artifact as a line per series (sparkline of
// y in x order, y min and max, x range, with units); a table as aligned columns (MaxRows rows); a figure
// and a link as one line; an omitted artifact as its note.
func Text(arts []capabilities.Artifact, width int) string {
	if width <= 0 {
		width = 100
	}
	var b strings.Builder
	for _, a := range arts {
		title := a.Title
		if title == "" {
			title = string(a.Kind)
		}
		fmt.Fprintf(&b, "%s\n", clip(title, width))
		switch {
		case a.Omitted != "":
			fmt.Fprintf(&b, "  %s\n", clip(a.Omitted, width-2))
		case a.TimeSeries != nil:
			textSeries(&b, a.TimeSeries.Series, width)
		case a.XY != nil:
			textXY(&b, a.XY, width)
		case a.Table != nil:
			textTable(&b, a.Table, width)
		case a.Figure != nil:
			if a.Figure.URL != "" {
				fmt.Fprintf(&b, "  image: %s\n", a.Figure.URL)
			} else {
				line := fmt.Sprintf("  image (%s, %s)", a.Figure.MediaType, byteSize(len(a.Figure.Data)))
				if a.Figure.Alt != "" {
					line += ": " + a.Figure.Alt
				}
				fmt.Fprintf(&b, "%s\n", clip(line, width))
			}
		case a.Link != nil:
			fmt.Fprintf(&b, "  %s\n", a.Link.URL)
		}
	}
	return b.String()
}

func textSeries(b *strings.Builder, ss []capabilities.Series, width int) {
	nameW := 0
	for _, s := range ss {
		nameW = max(nameW, utf8.RuneCountInString(s.Name))
	}
	nameW = min(nameW, 32)
	for _, s := range ss {
		st := SeriesStats(s)
		name := padRight(clip(s.Name, nameW), nameW)
		if st.Count == 0 {
			fmt.Fprintf(b, "  %s  (no data)\n", name)
			continue
		}
		units := ""
		if s.Units != "" {
			units = " " + s.Units
		}
		stats := fmt.Sprintf("min %s  max %s  last %s%s  (%d points)", Number(st.Min), Number(st.Max), Number(st.Last), units, st.Count)
		spark := max(0, min(24, width-nameW-utf8.RuneCountInString(stats)-6))
		line := "  " + name
		if spark >= 8 {
			line += "  " + Sparkline(s.Values, spark)
		}
		fmt.Fprintf(b, "%s\n", clip(line+"  "+stats, width))
	}
	if span := seriesSpan(ss); span != "" {
		fmt.Fprintf(b, "  %s\n", clip(span, width-2))
	}
}

func textXY(b *strings.Builder, xy *capabilities.XY, width int) {
	nameW := 0
	for _, s := range xy.Series {
		nameW = max(nameW, utf8.RuneCountInString(s.Name))
	}
	nameW = min(nameW, 32)
	unit := func(a capabilities.Axis) string {
		if a.Units == "" {
			return ""
		}
		return " " + a.Units
	}
	for _, s := range xy.Series {
		st := xyStats(s)
		name := padRight(clip(s.Name, nameW), nameW)
		if st.count == 0 {
			fmt.Fprintf(b, "  %s  (no data)\n", name)
			continue
		}
		stats := fmt.Sprintf("%s %s to %s%s  (%d points, %s %s to %s%s)", xy.Y.Label, Number(st.yMin), Number(st.yMax), unit(xy.Y),
			st.count, xy.X.Label, Number(st.xFrom), Number(st.xTo), unit(xy.X))
		spark := max(0, min(24, width-nameW-utf8.RuneCountInString(stats)-6))
		line := "  " + name
		if spark >= 8 {
			line += "  " + Sparkline(s.Y, spark)
		}
		fmt.Fprintf(b, "%s\n", clip(line+"  "+stats, width))
	}
}

func textTable(b *strings.Builder, t *capabilities.Table, width int) {
	heads := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		heads[i] = c.Name
		if c.Units != "" {
			heads[i] += " (" + c.Units + ")"
		}
	}
	shown := t.Rows[:min(len(t.Rows), MaxRows)]
	rows := make([][]string, len(shown))
	widths := make([]int, len(heads))
	for i, h := range heads {
		widths[i] = utf8.RuneCountInString(h)
	}
	for r, row := range shown {
		rows[r] = make([]string, len(row))
		for i, c := range row {
			rows[r][i] = strings.Join(strings.Fields(Cell(c)), " ")
			widths[i] = max(widths[i], utf8.RuneCountInString(rows[r][i]))
		}
	}
	for i := range widths {
		widths[i] = min(widths[i], 40)
	}
	numeric := make([]bool, len(heads))
	for i := range numeric {
		numeric[i] = numericColumn(t, i)
	}
	line := func(cells []string) {
		var l strings.Builder
		l.WriteString(" ")
		for i, c := range cells {
			c = clip(c, widths[i])
			if numeric[i] {
				c = strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)) + c
			} else if i < len(cells)-1 {
				c = padRight(c, widths[i])
			}
			l.WriteString(" " + c)
		}
		fmt.Fprintf(b, "%s\n", clip(strings.TrimRight(l.String(), " "), width))
	}
	line(heads)
	for _, r := range rows {
		line(r)
	}
	if more := len(t.Rows) - len(shown); more > 0 {
		fmt.Fprintf(b, "  … and %d more rows\n", more)
	}
}

func padRight(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-utf8.RuneCountInString(s)))
}

// clip shortens s to w characters, ending in "…" when cut.
func clip(s string, w int) string {
	if w <= 0 || utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, w-1)]) + "…"
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
