package plant

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// Context types the control-room capabilities exchange.
const (
	ChannelAddressesType    = "CHANNEL_ADDRESSES"
	ChannelValuesType       = "CHANNEL_VALUES"
	ArchiverDataType        = "ARCHIVER_DATA"
	ChannelWriteResultsType = "CHANNEL_WRITE_RESULTS"
)

// ChannelAddressesKey is CHANNEL_ADDRESSES with its Go type: channel_finding
// provides it, the readers and the write require it, and the registry
// checks that they agree.
var ChannelAddressesKey = capabilities.Key[ChannelAddresses](ChannelAddressesType)

// ChannelAddresses is what channel_finding found.
type ChannelAddresses struct {
	Query    string   `json:"query"`
	Channels []string `json:"channels"`
	// Descriptions of the channels, by name, so later steps and the
	// responder can explain them.
	Descriptions map[string]string `json:"descriptions,omitempty"`
	Truncated    bool              `json:"truncated,omitempty"`
	// Corrected and Ignored say how the query was read (FindResult).
	Corrected []Correction `json:"corrected,omitempty"`
	Ignored   []string     `json:"ignored,omitempty"`
	// NotFound is set, and Channels empty, when no channel matches: it
	// says what does not exist and what does.
	NotFound *NoMatch `json:"not_found,omitempty"`
	// Count: the user asked how many there are; the summary says the
	// number first, for Subject (what was counted, in the user's words).
	Count   bool   `json:"count,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// Summary lists the channels found, or says why none matches.
func (a ChannelAddresses) Summary() string {
	if a.NotFound != nil && a.NotFound.Unsupported != "" {
		return a.NotFound.Explain()
	}
	if a.NotFound != nil {
		return fmt.Sprintf("No channel matches %q. %s", a.Query, a.NotFound.Explain())
	}
	if a.Count {
		return fmt.Sprintf("There are %d channel%s for %s: %s", len(a.Channels), plural(len(a.Channels)), a.Subject, strings.Join(groupNames(a.Channels), ", "))
	}
	if len(a.Channels) > DefaultMaxMatches {
		// A verdict's many channels, by family.
		return fmt.Sprintf("Found %d channels for %q: %s", len(a.Channels), a.Query, strings.Join(groupNames(a.Channels), ", "))
	}
	s := fmt.Sprintf("Found %d channel%s for %q", len(a.Channels), plural(len(a.Channels)), a.Query)
	var notes []string
	for _, c := range a.Corrected {
		notes = append(notes, fmt.Sprintf("read %q as %q", c.From, c.To))
	}
	if len(a.Ignored) > 0 {
		notes = append(notes, "no channel matches "+quoteAll(a.Ignored, "or")+", so it was left out")
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	s += ": " + strings.Join(a.Channels, ", ")
	if a.Truncated {
		s += " (more matched; refine the query to see others)"
	}
	return s
}

// ChannelValue is one channel's current value.
type ChannelValue struct {
	Channel     string    `json:"channel"`
	Value       float64   `json:"value"`
	Text        string    `json:"text"` // the value formatted with the channel's precision and units
	Units       string    `json:"units"`
	Time        time.Time `json:"time"`
	Description string    `json:"description,omitempty"`
}

// ChannelValues is what channel_read read.
type ChannelValues struct {
	Values []ChannelValue `json:"values"`
	// Verdict is set when the user asked whether something is all right.
	Verdict *VerdictReport `json:"verdict,omitempty"`
	// Counted: the user asked how many there are, not for the values; the
	// summary leaves them to the table.
	Counted bool `json:"counted,omitempty"`
}

// Summary gives every value with units, what it is and when it was read;
// for a verdict, the verdict and the values that back it.
func (v ChannelValues) Summary() string {
	if v.Counted {
		return fmt.Sprintf("The present values of the %d channels are in the table.", len(v.Values))
	}
	if v.Verdict != nil {
		s := v.Verdict.Summary()
		if len(v.Values) > 0 {
			s += fmt.Sprintf("; read at %s", v.Values[0].Time.UTC().Format("2006-01-02 15:04:05 MST"))
		}
		return s
	}
	var b strings.Builder
	for i, cv := range v.Values {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s = %s", cv.Channel, cv.Text)
		if cv.Description != "" {
			fmt.Fprintf(&b, " (%s)", cv.Description)
		}
	}
	if len(v.Values) > 0 {
		fmt.Fprintf(&b, "; read at %s", v.Values[0].Time.UTC().Format("2006-01-02 15:04:05 MST"))
	}
	return b.String()
}

// ArchiverData is what archiver_retrieval retrieved.
type ArchiverData struct {
	Range  TimeRange `json:"range"`
	Series []Series  `json:"series"`
	// Note explains a default the capability chose (no range given).
	Note string `json:"note,omitempty"`
	// Compare holds the same channels over an earlier window, when the
	// user asked for a comparison ("compare with yesterday").
	Compare *Comparison `json:"compare,omitempty"`
	// Plot: the user asked for a chart ("plot it"); the answer says the
	// chart is there.
	Plot bool `json:"plot,omitempty"`
}

// Comparison is the same channels over a window shifted back.
type Comparison struct {
	Shift  Shift     `json:"shift"`
	Range  TimeRange `json:"range"`
	Series []Series  `json:"series"`
}

// Summary gives the range and each series' statistics.
func (d ArchiverData) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Archive from %s to %s", d.Range.Start.UTC().Format("2006-01-02 15:04"), d.Range.End.UTC().Format("2006-01-02 15:04 MST"))
	if d.Range.Phrase != "" {
		fmt.Fprintf(&b, " (%s)", d.Range.Phrase)
	}
	if d.Note != "" {
		fmt.Fprintf(&b, "; %s", d.Note)
	}
	if d.Plot {
		fmt.Fprintf(&b, "; the chart shows all %s", plural2(len(d.Series), "channel", "channels"))
	}
	if c := d.Compare; c != nil {
		fmt.Fprintf(&b, "; compared with %s, %s to %s, side by side in one chart", c.Shift.Words,
			c.Range.Start.UTC().Format("2006-01-02 15:04"), c.Range.End.UTC().Format("2006-01-02 15:04 MST"))
	}
	for i, s := range d.Series {
		c := Channel{Precision: s.Precision}
		st := s.Stats
		fmt.Fprintf(&b, "; %s: %d samples, min %s, max %s, mean %s, std %s %s, first %s, last %s",
			s.Channel, st.Count, c.Format(st.Min), c.Format(st.Max), c.Format(st.Mean), c.Format(st.Std), s.Units,
			c.Format(st.First), c.Format(st.Last))
		if cmp := d.Compare; cmp != nil && i < len(cmp.Series) {
			was := cmp.Series[i].Stats
			diff := st.Mean - was.Mean
			fmt.Fprintf(&b, " — %s: mean %s, min %s, max %s %s; %s",
				cmp.Shift.Words, c.Format(was.Mean), c.Format(was.Min), c.Format(was.Max), s.Units, meanChange(c, diff, st.Std+was.Std, s.Units))
		}
	}
	return b.String()
}

// meanChange says how the mean moved between the windows and whether that
// stands out from the noise (the two windows' spreads).
func meanChange(c Channel, diff, spread float64, units string) string {
	by := strings.TrimSpace(c.Format(math.Abs(diff)) + " " + units)
	if v, err := strconv.ParseFloat(c.Format(math.Abs(diff)), 64); err == nil && v == 0 {
		return "the mean is the same"
	}
	dir := "higher"
	if diff < 0 {
		dir = "lower"
	}
	if math.Abs(diff) <= spread {
		return "the mean is " + by + " " + dir + " now, within the usual spread"
	}
	return "the mean is " + by + " " + dir + " now, more than the usual spread"
}

func plural2(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Artifact is the retrieved history as a time series: every archived
// sample of each channel, with its units, for charts.
func (d ArchiverData) Artifact() capabilities.Artifact {
	series := make([]capabilities.Series, 0, len(d.Series))
	for _, s := range d.Series {
		cs := capabilities.Series{Name: s.Channel, Units: s.Units,
			TimesMs: make([]int64, 0, len(s.Samples)), Values: make([]float64, 0, len(s.Samples))}
		for _, p := range s.Samples {
			cs.Add(p.Time, p.Value)
		}
		series = append(series, cs)
	}
	title := "Archived values"
	if d.Range.Phrase != "" {
		title += ", " + d.Range.Phrase
	}
	if c := d.Compare; c != nil {
		// The earlier window's samples moved onto the same hours, so both
		// lie side by side in one chart.
		for _, s := range c.Series {
			cs := capabilities.Series{Name: s.Channel + " (" + c.Shift.Words + ")", Units: s.Units,
				TimesMs: make([]int64, 0, len(s.Samples)), Values: make([]float64, 0, len(s.Samples))}
			for _, p := range s.Samples {
				cs.Add(p.Time.Add(c.Shift.By), p.Value)
			}
			series = append(series, cs)
		}
		title += ", compared with " + c.Shift.Words + " (moved onto the same hours)"
	}
	return capabilities.NewTimeSeries(title, series...)
}

// Artifact is the read values as a table: channel, value (at the
// channel's precision), units, status.
func (v ChannelValues) Artifact(p *Plant) capabilities.Artifact {
	rows := make([][]any, 0, len(v.Values))
	for _, cv := range v.Values {
		value, status := cv.Value, "ok"
		if c, ok := p.Channel(cv.Channel); ok {
			if f, err := strconv.ParseFloat(c.Format(cv.Value), 64); err == nil {
				value = f
			}
			if c.Writable && (cv.Value < c.Low || cv.Value > c.High) {
				status = "outside limits"
			} else if c.Ranges != nil && c.Ranges.Judge(cv.Value) != capabilities.VerdictNormal {
				status = string(c.Ranges.Judge(cv.Value)) // warning, alarm
			}
		}
		rows = append(rows, []any{cv.Channel, value, cv.Units, status})
	}
	title := "Channel values"
	if len(v.Values) > 0 {
		title += ", read at " + v.Values[0].Time.UTC().Format("15:04:05 UTC")
	}
	return capabilities.NewTable(title,
		[]capabilities.Column{{Name: "channel"}, {Name: "value"}, {Name: "units"}, {Name: "status"}}, rows...)
}

// Storage-ring geometry for the orbit profile: 12 sectors of 44 m, four
// BPMs in each, 11 m apart.
const (
	ringSectorLength = 44.0
	bpmSpacing       = 11.0
)

var srBPM = regexp.MustCompile(`^SR:C(\d\d):BPM(\d):([XY])$`)

// BPMPosition is where a storage-ring BPM sits along the ring, in metres
// from the start of sector 1, and its plane ("X" or "Y"); ok is false for
// any other channel.
func BPMPosition(channel string) (s float64, plane string, ok bool) {
	m := srBPM.FindStringSubmatch(channel)
	if m == nil {
		return 0, "", false
	}
	sector, _ := strconv.Atoi(m[1])
	bpm, _ := strconv.Atoi(m[2])
	return float64(sector-1)*ringSectorLength + (float64(bpm)-0.5)*bpmSpacing, m[3], true
}

// OrbitArtifact is the read storage-ring BPMs as an orbit profile: beam
// position (at each BPM's precision) against the position along the ring,
// a series per plane, when at least four BPMs of the ring were read (a
// profile needs points to show a shape); ok is false otherwise.
func (v ChannelValues) OrbitArtifact(p *Plant) (capabilities.Artifact, bool) {
	type point struct{ s, y float64 }
	planes := map[string][]point{}
	n := 0
	for _, cv := range v.Values {
		if s, plane, ok := BPMPosition(cv.Channel); ok {
			y := cv.Value
			if c, ok := p.Channel(cv.Channel); ok {
				if f, err := strconv.ParseFloat(c.Format(cv.Value), 64); err == nil {
					y = f
				}
			}
			planes[plane] = append(planes[plane], point{s, y})
			n++
		}
	}
	if n < 4 {
		return capabilities.Artifact{}, false
	}
	var series []capabilities.XYSeries
	for _, plane := range []struct{ axis, name string }{{"X", "horizontal"}, {"Y", "vertical"}} {
		pts := planes[plane.axis]
		if len(pts) == 0 {
			continue
		}
		slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.s, b.s) })
		xy := capabilities.XYSeries{Name: plane.name}
		for _, pt := range pts {
			xy.X, xy.Y = append(xy.X, pt.s), append(xy.Y, pt.y)
		}
		series = append(series, xy)
	}
	title := "Orbit along the storage ring"
	if len(v.Values) > 0 {
		title += ", read at " + v.Values[0].Time.UTC().Format("15:04:05 UTC")
	}
	return capabilities.NewXY(title, capabilities.Axis{Label: "position along the ring", Units: "m"},
		capabilities.Axis{Label: "beam position", Units: "mm"}, series...), true
}

// WriteResult is one completed write.
type WriteResult struct {
	Channel  string  `json:"channel"`
	Old      float64 `json:"old"`
	New      float64 `json:"new"`
	Readback float64 `json:"readback"`
	Units    string  `json:"units"`
	Verified bool    `json:"verified"`
	Text     string  `json:"text"` // "BTS:MAG:Q1:CURRENT from 92.00 → 105.00 A"
}

// ChannelWriteResults is what channel_write did.
type ChannelWriteResults struct {
	Writes []WriteResult `json:"writes"`
}

// Summary says what was set, from what, and the readback.
func (r ChannelWriteResults) Summary() string {
	var parts []string
	for _, w := range r.Writes {
		parts = append(parts, "Set "+w.Text+" (readback verified)")
	}
	return strings.Join(parts, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
