package plant_test

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/demo/controlroom/plant"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newPlant(t *testing.T, cfg plant.Config) (*plant.Plant, *clock) {
	t.Helper()
	c := &clock{t: t0}
	if cfg.Now == nil {
		cfg.Now = c.now
	}
	p, err := plant.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestCatalog(t *testing.T) {
	cs := plant.Catalog()
	if len(cs) < 200 {
		t.Errorf("catalog has %d channels, want a few hundred", len(cs))
	}
	name := regexp.MustCompile(`^[A-Z]+(:[A-Z0-9_]+)+$`)
	seen := map[string]bool{}
	for _, c := range cs {
		if !name.MatchString(c.Name) {
			t.Errorf("%q is not an EPICS-style name", c.Name)
		}
		if seen[c.Name] {
			t.Errorf("%s twice", c.Name)
		}
		seen[c.Name] = true
		if c.Description == "" {
			t.Errorf("%s has no description", c.Name)
		}
		if c.Writable && !(c.Low < c.High && c.Nominal >= c.Low && c.Nominal <= c.High) {
			t.Errorf("%s: nominal %g not within limits [%g, %g]", c.Name, c.Nominal, c.Low, c.High)
		}
	}
	for _, must := range []string{"SR:DCCT:CURRENT", "SR:RF:CAV1:VOLT", "LINAC:GUN:CURRENT", "BTS:MAG:Q1:CURRENT", "SR:C03:VAC:GAUGE1", "SR:C01:BPM1:X", "SR:BEAM:LIFETIME", "SR:C05:TEMP:MAG"} {
		if !seen[must] {
			t.Errorf("catalog lacks %s", must)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  plant.Config
	}{
		{"negative retention", plant.Config{Retention: -time.Hour}},
		{"max points", plant.Config{MaxPoints: 1}},
		{"interval > retention", plant.Config{Retention: time.Minute, ArchiveInterval: time.Hour}},
		{"duplicate channel", plant.Config{Channels: []plant.Channel{{Name: "A:B"}, {Name: "A:B"}}}},
		{"unnamed channel", plant.Config{Channels: []plant.Channel{{}}}},
		{"inverted limits", plant.Config{Channels: []plant.Channel{{Name: "A:B", Writable: true, Low: 5, High: 1}}}},
	}
	for _, tt := range tests {
		if _, err := plant.New(tt.cfg); !errors.Is(err, plant.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

func TestReadDeterministic(t *testing.T) {
	a, _ := newPlant(t, plant.Config{Seed: 7})
	b, _ := newPlant(t, plant.Config{Seed: 7})
	c, _ := newPlant(t, plant.Config{Seed: 8})
	ra, err := a.Read("SR:DCCT:CURRENT")
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := b.Read("SR:DCCT:CURRENT")
	rc, _ := c.Read("SR:DCCT:CURRENT")
	if ra != rb {
		t.Errorf("same seed, different readings: %+v vs %+v", ra, rb)
	}
	if ra.Value == rc.Value {
		t.Errorf("different seeds read the same value %g", ra.Value)
	}
	ch, _ := a.Channel("SR:DCCT:CURRENT")
	if math.Abs(ra.Value-ch.Nominal) > ch.Drift+ch.Noise || ra.Units != "mA" || !ra.Time.Equal(t0) {
		t.Errorf("reading %+v out of its envelope", ra)
	}
}

func TestReadErrorsAndFaults(t *testing.T) {
	p, _ := newPlant(t, plant.Config{Faults: plant.Faults{ReadTimeouts: 2}})
	for i := range 2 {
		if _, err := p.Read("SR:DCCT:CURRENT"); !errors.Is(err, plant.ErrTimeout) {
			t.Fatalf("read %d: err = %v, want ErrTimeout", i+1, err)
		}
	}
	if _, err := p.Read("SR:DCCT:CURRENT"); err != nil {
		t.Fatalf("third read: %v", err)
	}
	_, err := p.Read("NO:SUCH:PV")
	var ce *plant.ChannelError
	if !errors.Is(err, plant.ErrUnknownChannel) || !errors.As(err, &ce) || ce.Channel != "NO:SUCH:PV" || ce.Op != "read" {
		t.Errorf("unknown channel err = %v", err)
	}
}

func TestWrite(t *testing.T) {
	p, clk := newPlant(t, plant.Config{})
	const q1 = "BTS:MAG:Q1:CURRENT"
	old, err := p.Write(q1, 105)
	if err != nil || old != 92 {
		t.Fatalf("Write = %g, %v; want old 92", old, err)
	}
	if sp, _ := p.Setpoint(q1); sp != 105 {
		t.Errorf("setpoint = %g, want 105", sp)
	}
	r, _ := p.Read(q1)
	if math.Abs(r.Value-105) > 0.01 {
		t.Errorf("read %g after writing 105", r.Value)
	}
	// The archive before the write still shows the old setpoint.
	clk.t = t0.Add(10 * time.Minute)
	s, err := p.History(q1, t0.Add(-5*time.Minute), clk.t)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.Samples[0].Value-92) > 0.01 || math.Abs(s.Samples[len(s.Samples)-1].Value-105) > 0.01 {
		t.Errorf("history does not show the step 92 → 105: first %g last %g", s.Samples[0].Value, s.Samples[len(s.Samples)-1].Value)
	}

	var le *plant.LimitError
	if _, err := p.Write(q1, 151); !errors.As(err, &le) || !errors.Is(err, plant.ErrLimitViolation) || le.High != 150 {
		t.Errorf("over-limit write err = %v", err)
	}
	if _, err := p.Write(q1, math.NaN()); !errors.Is(err, plant.ErrLimitViolation) {
		t.Errorf("NaN write err = %v", err)
	}
	if _, err := p.Write("SR:DCCT:CURRENT", 1); !errors.Is(err, plant.ErrNotWritable) {
		t.Errorf("read-only write err = %v", err)
	}
	if _, err := p.Write("NO:PV", 1); !errors.Is(err, plant.ErrUnknownChannel) {
		t.Errorf("unknown write err = %v", err)
	}
	if sp, _ := p.Setpoint(q1); sp != 105 {
		t.Errorf("refused writes changed the setpoint to %g", sp)
	}
	p.InjectFaults(plant.Faults{WriteTimeouts: 1})
	if _, err := p.Write(q1, 100); !errors.Is(err, plant.ErrTimeout) {
		t.Errorf("write with timeout fault err = %v", err)
	}
	if sp, _ := p.Setpoint(q1); sp != 105 {
		t.Errorf("timed-out write changed the setpoint to %g", sp)
	}
}

func TestHistory(t *testing.T) {
	p, _ := newPlant(t, plant.Config{Seed: 1})
	s, err := p.History("SR:RF:CAV1:VOLT", t0.Add(-2*time.Hour), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Samples) != 121 || s.Interval != time.Minute || s.Units != "kV" {
		t.Fatalf("2 h at 1 min: %d samples, interval %s, units %q", len(s.Samples), s.Interval, s.Units)
	}
	if !s.Samples[0].Time.Equal(t0.Add(-2*time.Hour)) || !s.Samples[120].Time.Equal(t0) {
		t.Errorf("range %s..%s", s.Samples[0].Time, s.Samples[120].Time)
	}
	// Samples agree with a reading at the same time.
	r, _ := p.Read("SR:RF:CAV1:VOLT")
	if r.Value != s.Samples[120].Value {
		t.Errorf("archive %g and reading %g differ at the same time", s.Samples[120].Value, r.Value)
	}
	st := s.Stats
	if st.Count != 121 || st.Min > st.Mean || st.Mean > st.Max || st.Std <= 0 || st.First != s.Samples[0].Value || st.Last != r.Value {
		t.Errorf("stats %+v", st)
	}

	// Decimation of a long range, clipping to retention.
	long, err := p.History("SR:DCCT:CURRENT", t0.Add(-30*24*time.Hour), t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(long.Samples) > plant.DefaultMaxPoints || long.Interval <= time.Minute {
		t.Errorf("7 days: %d samples at %s; want ≤ %d, decimated", len(long.Samples), long.Interval, plant.DefaultMaxPoints)
	}
	if first := long.Samples[0].Time; first.Before(t0.Add(-plant.DefaultRetention)) {
		t.Errorf("first sample %s is older than the retention", first)
	}

	if _, err := p.History("SR:DCCT:CURRENT", t0.Add(time.Hour), t0.Add(2*time.Hour)); !errors.Is(err, plant.ErrNoData) {
		t.Errorf("future range err = %v, want ErrNoData", err)
	}
	p.InjectFaults(plant.Faults{ArchiveTimeouts: 1})
	if _, err := p.History("SR:DCCT:CURRENT", t0.Add(-time.Hour), t0); !errors.Is(err, plant.ErrTimeout) {
		t.Errorf("archive timeout fault err = %v", err)
	}
	if _, err := p.History("SR:DCCT:CURRENT", t0.Add(-time.Hour), t0); err != nil {
		t.Errorf("after the timeout: %v", err)
	}
	p.InjectFaults(plant.Faults{ArchiverDown: true})
	if _, err := p.History("SR:DCCT:CURRENT", t0.Add(-time.Hour), t0); !errors.Is(err, plant.ErrDisconnected) {
		t.Errorf("archiver down err = %v", err)
	}
}

func TestSummarise(t *testing.T) {
	st := plant.Summarise([]plant.Sample{{Value: 2}, {Value: 4}, {Value: 4}, {Value: 4}, {Value: 5}, {Value: 5}, {Value: 7}, {Value: 9}})
	want := plant.Stats{Count: 8, Min: 2, Max: 9, Mean: 5, Std: 2, First: 2, Last: 9}
	if st != want {
		t.Errorf("Summarise = %+v, want %+v", st, want)
	}
	if z := plant.Summarise(nil); z != (plant.Stats{}) {
		t.Errorf("Summarise(nil) = %+v", z)
	}
}

func TestFind(t *testing.T) {
	p, _ := newPlant(t, plant.Config{})
	tests := []struct {
		query string
		want  []string // exact set, sorted
	}{
		{"What is the beam current?", []string{"SR:DCCT:CURRENT"}},
		{"stored beam current", []string{"SR:DCCT:CURRENT"}},
		{"Show me the RF cavity voltage over the last 2 hours", []string{"SR:RF:CAV1:VOLT", "SR:RF:CAV2:VOLT", "SR:RF:CAV3:VOLT", "SR:RF:CAV4:VOLT"}},
		{"RF cavity 2 voltage", []string{"SR:RF:CAV2:VOLT"}},
		{"What is the vacuum pressure in sector 3?", []string{"SR:C03:VAC:GAUGE1", "SR:C03:VAC:GAUGE2"}},
		{"Set the quadrupole Q1 current in the BTS line to 105 A", []string{"BTS:MAG:Q1:CURRENT"}},
		{"gun current", []string{"LINAC:GUN:CURRENT"}},
		{"beam lifetime since yesterday", []string{"SR:BEAM:LIFETIME"}},
		{"klystron 3 power", []string{"LINAC:KLY3:POWER"}},
		{"read sr:dcct:current and SR:BEAM:LIFETIME", []string{"SR:BEAM:LIFETIME", "SR:DCCT:CURRENT"}},
		{"magnet temperature in sector 12", []string{"SR:C12:TEMP:MAG"}},
	}
	for _, tt := range tests {
		res, err := p.Find(tt.query, 0)
		if err != nil {
			t.Errorf("Find(%q): %v", tt.query, err)
			continue
		}
		got := slices.Sorted(slices.Values(res.Channels))
		if !slices.Equal(got, tt.want) {
			t.Errorf("Find(%q) = %v, want %v", tt.query, got, tt.want)
		}
	}
	for _, q := range []string{"What is the weather in Paris?", "RF cavity 9 voltage", ""} {
		if res, err := p.Find(q, 0); !errors.Is(err, plant.ErrNoMatch) {
			t.Errorf("Find(%q) = %v, %v; want ErrNoMatch", q, res.Channels, err)
		}
	}
	res, err := p.Find("horizontal beam position", 5)
	if err != nil || len(res.Channels) != 5 || !res.Truncated {
		t.Errorf("capped search = %v (truncated %v), %v", res.Channels, res.Truncated, err)
	}
}

func TestParseTimeRange(t *testing.T) {
	midnight := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		text       string
		start, end time.Time
	}{
		{"RF voltage over the last 2 hours", t0.Add(-2 * time.Hour), t0},
		{"past 30 minutes", t0.Add(-30 * time.Minute), t0},
		{"in the last hour", t0.Add(-time.Hour), t0},
		{"the last day", t0.Add(-24 * time.Hour), t0},
		{"last three days", t0.Add(-72 * time.Hour), t0},
		{"over the past week", t0.Add(-7 * 24 * time.Hour), t0},
		{"last 1.5 h", t0.Add(-90 * time.Minute), t0},
		{"since yesterday", midnight.AddDate(0, 0, -1), t0},
		{"what happened yesterday", midnight.AddDate(0, 0, -1), midnight},
		{"today", midnight, t0},
	}
	for _, tt := range tests {
		r, err := plant.ParseTimeRange(tt.text, t0)
		if err != nil || !r.Start.Equal(tt.start) || !r.End.Equal(tt.end) {
			t.Errorf("ParseTimeRange(%q) = %s..%s, %v; want %s..%s", tt.text, r.Start, r.End, err, tt.start, tt.end)
		}
	}
	if _, err := plant.ParseTimeRange("what is the beam current", t0); !errors.Is(err, plant.ErrNoTimeRange) {
		t.Errorf("no range: err = %v", err)
	}
	if got := strings.Join(strings.Fields(plant.StripTimeRange("RF voltage over the last 2 hours")), " "); got != "RF voltage" {
		t.Errorf("StripTimeRange = %q", got)
	}
}

func ExamplePlant_Find() {
	p, _ := plant.New(plant.Config{})
	res, _ := p.Find("What is the vacuum pressure in sector 3?", 0)
	fmt.Println(res.Channels)
	// Output: [SR:C03:VAC:GAUGE1 SR:C03:VAC:GAUGE2]
}

func ExampleParseTimeRange() {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r, _ := plant.ParseTimeRange("Show me the RF cavity voltage over the last 2 hours", now)
	fmt.Println(r.Start.Format(time.Kitchen), "to", r.End.Format(time.Kitchen), "-", r.Phrase)
	// Output: 10:00AM to 12:00PM - over the last 2 hours
}
