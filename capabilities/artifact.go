package capabilities

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
)

// Artifacts are renderable results a step returns beside its context data:
// the context data is what later steps and the answer read, an artifact is
// what a person looks at (a chart, a table, an image, a link). The agent
// checks them (Validate), gives them ids, keeps them with the step's result
// in the checkpoint, and sends each as an event; every frontend renders
// them (docs/frontends.md, "Artifacts").

// ArtifactKind says what an artifact is; exactly the matching field of
// Artifact is set.
type ArtifactKind string

const (
	ArtifactTimeSeries ArtifactKind = "timeseries" // Artifact.TimeSeries
	ArtifactXY         ArtifactKind = "xy"         // Artifact.XY
	ArtifactTable      ArtifactKind = "table"      // Artifact.Table
	ArtifactFigure     ArtifactKind = "figure"     // Artifact.Figure
	ArtifactLink       ArtifactKind = "link"       // Artifact.Link
)

// ErrInvalidArtifact is the kind of every error of Artifact.Validate.
var ErrInvalidArtifact = errors.New("invalid artifact")

// Artifact is one renderable result. Build it with NewTimeSeries, NewXY,
// NewTable, NewFigure, NewFigureURL or NewLink, and return it in
// Output.Artifacts.
type Artifact struct {
	// ID names the artifact within its thread, set by the agent (a
	// capability leaves it empty): "t<turn>.p<plan>.s<step>.<n>", the n-th
	// artifact of a plan step, from 0. A step run again after a crash gives
	// its artifacts the same ids, so a frontend replaces what it showed.
	ID string `json:"id,omitempty"`
	// Kind says which of the payload fields is set.
	Kind ArtifactKind `json:"kind"`
	// Title is a short heading ("SR:RF voltages, last 2 h"); optional.
	Title string `json:"title,omitempty"`

	// Turn, Step and Capability say where the artifact came from (the
	// turn's number, the plan step's index from 0, the capability that
	// ran it); set by the agent.
	Turn       int    `json:"turn,omitempty"`
	Step       int    `json:"step"`
	Capability string `json:"capability,omitempty"`

	TimeSeries *TimeSeries `json:"timeseries,omitempty"`
	XY         *XY         `json:"xy,omitempty"`
	Table      *Table      `json:"table,omitempty"`
	Figure     *Figure     `json:"figure,omitempty"`
	Link       *Link       `json:"link,omitempty"`

	// Omitted, set by the agent, says why the payload was left out (it was
	// larger than the agent's artifact limit); the payload fields are then
	// nil and a frontend shows this note in their place.
	Omitted string `json:"omitted,omitempty"`
}

// TimeSeries is one or more channels sampled over time: an archive's
// history, a measurement. Each series has its own timestamps, so channels
// sampled at different moments need no alignment.
type TimeSeries struct {
	Series []Series `json:"series"`
}

// Series is one channel of a time series.
type Series struct {
	// Name is the channel's name (unique within the time series).
	Name string `json:"name"`
	// Units of the values ("kV", "mA"); "" for none.
	Units string `json:"units,omitempty"`
	// TimesMs are the samples' times in Unix milliseconds (UTC), in
	// non-decreasing order; as many as Values.
	TimesMs []int64 `json:"times_ms"`
	// Values are finite numbers (JSON has no NaN: leave a gap out).
	Values []float64 `json:"values"`
}

// Add appends one sample.
func (s *Series) Add(t time.Time, v float64) {
	s.TimesMs = append(s.TimesMs, t.UnixMilli())
	s.Values = append(s.Values, v)
}

// Time returns the i-th sample's time.
func (s Series) Time(i int) time.Time { return time.UnixMilli(s.TimesMs[i]).UTC() }

// XY is one or more curves of a value against another that is not time: a
// scan (a signal against a setpoint), a profile (the orbit against the
// position along the ring). Each series has its own x values, in the order
// measured.
type XY struct {
	// X and Y name the axes and their units.
	X Axis `json:"x"`
	Y Axis `json:"y"`
	// Series are the curves (names unique within the artifact).
	Series []XYSeries `json:"series"`
}

// Axis names an axis of an XY artifact: a label ("position along the
// ring") and units ("m"; "" for none).
type Axis struct {
	Label string `json:"label"`
	Units string `json:"units,omitempty"`
}

// XYSeries is one curve of an XY artifact: as many finite X as Y values.
type XYSeries struct {
	Name string    `json:"name"`
	X    []float64 `json:"x"`
	Y    []float64 `json:"y"`
}

// Table is rows of cells under named columns.
type Table struct {
	Columns []Column `json:"columns"`
	// Rows hold one cell per column: a string, a finite number, a bool or
	// nil (an empty cell). Numbers stay numbers, so a frontend can sort
	// and align them; round them to a sensible precision first.
	Rows [][]any `json:"rows"`
}

// Column is a table column.
type Column struct {
	Name string `json:"name"`
	// Units of the column's numbers, when they share one ("" otherwise;
	// a table whose rows have different units gives units a column).
	Units string `json:"units,omitempty"`
}

// Figure is an image: its bytes (Data, with MediaType) or a reference to
// one (URL).
type Figure struct {
	// MediaType is the image's type: image/png, image/jpeg, image/gif,
	// image/webp or image/svg+xml. Required with Data.
	MediaType string `json:"media_type,omitempty"`
	// Data is the image (base64 in JSON); exclusive with URL.
	Data []byte `json:"data,omitempty"`
	// URL is an http(s) address of the image; exclusive with Data.
	URL string `json:"url,omitempty"`
	// Alt describes the image for those who cannot see it.
	Alt string `json:"alt,omitempty"`
}

// Link points to something a person may open: a logbook entry, a
// dashboard, a document. The artifact's Title is its text.
type Link struct {
	// URL is an absolute http(s) address.
	URL string `json:"url"`
}

// figureMediaTypes are the media types a Figure's Data may have.
var figureMediaTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"}

// NewTimeSeries returns a time-series artifact of the series.
func NewTimeSeries(title string, series ...Series) Artifact {
	return Artifact{Kind: ArtifactTimeSeries, Title: title, TimeSeries: &TimeSeries{Series: series}}
}

// NewXY returns an x–y artifact: the series' y against their x, on axes
// x and y.
func NewXY(title string, x, y Axis, series ...XYSeries) Artifact {
	return Artifact{Kind: ArtifactXY, Title: title, XY: &XY{X: x, Y: y, Series: series}}
}

// NewTable returns a table artifact.
func NewTable(title string, columns []Column, rows ...[]any) Artifact {
	if rows == nil {
		rows = [][]any{}
	}
	return Artifact{Kind: ArtifactTable, Title: title, Table: &Table{Columns: columns, Rows: rows}}
}

// NewFigure returns a figure artifact holding an image.
func NewFigure(title, mediaType string, data []byte, alt string) Artifact {
	return Artifact{Kind: ArtifactFigure, Title: title, Figure: &Figure{MediaType: mediaType, Data: data, Alt: alt}}
}

// NewFigureURL returns a figure artifact referring to an image by its
// address (mediaType may be "").
func NewFigureURL(title, mediaType, url, alt string) Artifact {
	return Artifact{Kind: ArtifactFigure, Title: title, Figure: &Figure{MediaType: mediaType, URL: url, Alt: alt}}
}

// NewLink returns a link artifact.
func NewLink(title, url string) Artifact {
	return Artifact{Kind: ArtifactLink, Title: title, Link: &Link{URL: url}}
}

// With returns o with the artifacts appended:
// Result(t, v, summary).With(NewTable(…)).
func (o Output) With(artifacts ...Artifact) Output {
	o.Artifacts = append(o.Artifacts[:len(o.Artifacts):len(o.Artifacts)], artifacts...)
	return o
}

// Validate reports the first thing wrong with the artifact, naming where
// (an error wrapping ErrInvalidArtifact). An omitted artifact (Omitted set,
// no payload) is valid.
func (a Artifact) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidArtifact, fmt.Sprintf(format, args...))
	}
	set := 0
	for _, p := range []bool{a.TimeSeries != nil, a.XY != nil, a.Table != nil, a.Figure != nil, a.Link != nil} {
		if p {
			set++
		}
	}
	if a.Omitted != "" && set == 0 {
		return nil
	}
	if set > 1 {
		return bad("kind %q: more than one of timeseries, xy, table, figure, link is set", a.Kind)
	}
	switch a.Kind {
	case ArtifactTimeSeries:
		if a.TimeSeries == nil {
			return bad("kind timeseries without timeseries")
		}
		return a.TimeSeries.validate(bad)
	case ArtifactXY:
		if a.XY == nil {
			return bad("kind xy without xy")
		}
		return a.XY.validate(bad)
	case ArtifactTable:
		if a.Table == nil {
			return bad("kind table without table")
		}
		return a.Table.validate(bad)
	case ArtifactFigure:
		if a.Figure == nil {
			return bad("kind figure without figure")
		}
		return a.Figure.validate(bad)
	case ArtifactLink:
		if a.Link == nil {
			return bad("kind link without link")
		}
		if err := checkURL(a.Link.URL); err != nil {
			return bad("link: %v", err)
		}
		return nil
	case "":
		return bad("no kind")
	}
	return bad("unknown kind %q (want timeseries, xy, table, figure or link)", a.Kind)
}

func (ts *TimeSeries) validate(bad func(string, ...any) error) error {
	if len(ts.Series) == 0 {
		return bad("timeseries has no series")
	}
	names := make(map[string]bool, len(ts.Series))
	for i, s := range ts.Series {
		if strings.TrimSpace(s.Name) == "" {
			return bad("timeseries series[%d] has no name", i)
		}
		if names[s.Name] {
			return bad("timeseries has two series named %q", s.Name)
		}
		names[s.Name] = true
		if len(s.TimesMs) != len(s.Values) {
			return bad("timeseries series %q has %d times and %d values", s.Name, len(s.TimesMs), len(s.Values))
		}
		for j, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return bad("timeseries series %q value[%d] is %v (leave gaps out)", s.Name, j, v)
			}
			if j > 0 && s.TimesMs[j] < s.TimesMs[j-1] {
				return bad("timeseries series %q times_ms[%d] is before times_ms[%d] (times must not decrease)", s.Name, j, j-1)
			}
		}
	}
	return nil
}

func (xy *XY) validate(bad func(string, ...any) error) error {
	if strings.TrimSpace(xy.X.Label) == "" || strings.TrimSpace(xy.Y.Label) == "" {
		return bad("xy axes need labels (x %q, y %q)", xy.X.Label, xy.Y.Label)
	}
	if len(xy.Series) == 0 {
		return bad("xy has no series")
	}
	names := make(map[string]bool, len(xy.Series))
	for i, s := range xy.Series {
		if strings.TrimSpace(s.Name) == "" {
			return bad("xy series[%d] has no name", i)
		}
		if names[s.Name] {
			return bad("xy has two series named %q", s.Name)
		}
		names[s.Name] = true
		if len(s.X) != len(s.Y) {
			return bad("xy series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		for j := range s.X {
			for _, v := range [2]struct {
				axis string
				v    float64
			}{{"x", s.X[j]}, {"y", s.Y[j]}} {
				if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
					return bad("xy series %q %s[%d] is %v (leave gaps out)", s.Name, v.axis, j, v.v)
				}
			}
		}
	}
	return nil
}

func (t *Table) validate(bad func(string, ...any) error) error {
	if len(t.Columns) == 0 {
		return bad("table has no columns")
	}
	for i, c := range t.Columns {
		if strings.TrimSpace(c.Name) == "" {
			return bad("table column[%d] has no name", i)
		}
	}
	for i, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return bad("table row[%d] has %d cells, the table has %d columns", i, len(row), len(t.Columns))
		}
		for j, cell := range row {
			if err := checkCell(cell); err != nil {
				return bad("table row[%d] column %q: %v", i, t.Columns[j].Name, err)
			}
		}
	}
	return nil
}

// checkCell accepts what JSON keeps as it is: strings, finite numbers,
// bools and nil.
func checkCell(v any) error {
	var f float64
	switch x := v.(type) {
	case nil, string, bool, json.Number:
		return nil
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return nil
	case float32:
		f = float64(x)
	case float64:
		f = x
	default:
		return fmt.Errorf("a %T cell (want a string, number, bool or nil)", v)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("the number %v (want a finite number, or nil for an empty cell)", f)
	}
	return nil
}

func (f *Figure) validate(bad func(string, ...any) error) error {
	switch {
	case len(f.Data) > 0 && f.URL != "":
		return bad("figure has both data and url")
	case len(f.Data) == 0 && f.URL == "":
		return bad("figure has neither data nor url")
	case f.URL != "":
		if err := checkURL(f.URL); err != nil {
			return bad("figure: %v", err)
		}
		return nil
	}
	known := false
	for _, mt := range figureMediaTypes {
		known = known || f.MediaType == mt
	}
	if !known {
		return bad("figure media_type %q (want one of %s)", f.MediaType, strings.Join(figureMediaTypes, ", "))
	}
	if !looksLike(f.MediaType, f.Data) {
		return bad("figure data is not %s", f.MediaType)
	}
	return nil
}

// looksLike checks an image's first bytes against its media type, so a
// frontend is never handed bytes that are something else.
func looksLike(mediaType string, b []byte) bool {
	switch mediaType {
	case "image/png":
		return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF})
	case "image/gif":
		return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
	case "image/webp":
		return len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP"))
	case "image/svg+xml":
		head := b[:min(len(b), 1024)]
		return bytes.Contains(head, []byte("<svg"))
	}
	return false
}

// checkURL accepts absolute http and https addresses only: a frontend puts
// the address into a page, where another scheme (javascript:, data:) could
// run or hide something.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("url %q is not an absolute http(s) address", raw)
	}
	return nil
}
