package plant

import (
	"fmt"
	"math"
	"time"
)

// Sample is one archived value.
type Sample struct {
	Time  time.Time `json:"t"`
	Value float64   `json:"v"`
}

// Stats summarises a series.
type Stats struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
	// Std is the population standard deviation.
	Std   float64 `json:"std"`
	First float64 `json:"first"`
	Last  float64 `json:"last"`
}

// Series is one channel's archived history over a range.
type Series struct {
	Channel string `json:"channel"`
	Units   string `json:"units"`
	// Precision is the channel's display precision (see Channel.Precision).
	Precision int `json:"precision"`
	// Interval is the spacing of Samples (coarser than the archive's when
	// the range held more than MaxPoints samples).
	Interval time.Duration `json:"interval"`
	Samples  []Sample      `json:"samples"`
	Stats    Stats         `json:"stats"`
}

// History returns a channel's archived samples in [start, end], clipped to
// the retention window and to now. Samples lie on multiples of the archive
// interval; a range longer than MaxPoints samples is decimated.
func (p *Plant) History(name string, start, end time.Time) (Series, error) {
	c, ok := p.channels[name]
	if !ok {
		return Series{}, &ChannelError{Op: "archive", Channel: name, Err: ErrUnknownChannel}
	}
	p.mu.Lock()
	down := p.faults.ArchiverDown
	timeout := !down && take(&p.faults.ArchiveTimeouts)
	p.mu.Unlock()
	switch {
	case down:
		return Series{}, &ChannelError{Op: "archive", Channel: name, Err: ErrDisconnected}
	case timeout:
		return Series{}, &ChannelError{Op: "archive", Channel: name, Err: ErrTimeout}
	}
	now := p.cfg.Now()
	if oldest := now.Add(-p.cfg.Retention); start.Before(oldest) {
		start = oldest
	}
	if end.After(now) {
		end = now
	}
	iv := p.cfg.ArchiveInterval
	first := start.Truncate(iv)
	if first.Before(start) {
		first = first.Add(iv)
	}
	if end.Before(first) {
		return Series{}, &ChannelError{Op: "archive", Channel: name,
			Err: fmt.Errorf("%w (%s to %s; the archive keeps %s)", ErrNoData, start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), p.cfg.Retention)}
	}
	n := int(end.Sub(first)/iv) + 1
	step := iv
	if n > p.cfg.MaxPoints {
		k := (n + p.cfg.MaxPoints - 1) / p.cfg.MaxPoints
		step = iv * time.Duration(k)
	}
	s := Series{Channel: name, Units: c.Units, Precision: c.Precision, Interval: step}
	for t := first; !t.After(end); t = t.Add(step) {
		s.Samples = append(s.Samples, Sample{Time: t.UTC(), Value: p.valueAt(c, t)})
	}
	s.Stats = Summarise(s.Samples)
	return s, nil
}

// Summarise computes a series' statistics (zero Stats for no samples).
func Summarise(samples []Sample) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	st := Stats{Count: len(samples), Min: math.Inf(1), Max: math.Inf(-1),
		First: samples[0].Value, Last: samples[len(samples)-1].Value}
	var sum float64
	for _, s := range samples {
		st.Min = math.Min(st.Min, s.Value)
		st.Max = math.Max(st.Max, s.Value)
		sum += s.Value
	}
	st.Mean = sum / float64(len(samples))
	var sq float64
	for _, s := range samples {
		d := s.Value - st.Mean
		sq += d * d
	}
	st.Std = math.Sqrt(sq / float64(len(samples)))
	return st
}
