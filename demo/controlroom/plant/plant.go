package plant

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// Default simulator settings.
const (
	// DefaultRetention is 8 days: a week and the hours before it, so "vs
	// last week" finds the same window a week earlier.
	DefaultRetention       = 8 * 24 * time.Hour
	DefaultArchiveInterval = time.Minute
	DefaultMaxPoints       = 600
)

// ErrInvalidConfig is the kind of a New error.
var ErrInvalidConfig = errors.New("plant: invalid config")

// Config configures New. The zero value is a working simulator on the wall
// clock.
type Config struct {
	// Seed makes the noise reproducible; two plants with the same seed read
	// the same values at the same times.
	Seed int64
	// Now is the simulator's clock (default time.Now). Tests pass a fixed clock.
	Now func() time.Time
	// Retention is how far back the archive goes (default 8 days).
	Retention time.Duration
	// ArchiveInterval is the archive's sample spacing (default 1 minute).
	ArchiveInterval time.Duration
	// MaxPoints caps the samples of one archived series; longer ranges are
	// decimated to a coarser spacing (default 600).
	MaxPoints int
	// Faults to inject from the start.
	Faults Faults
	// Channels replaces the built-in Catalog (for tests and other machines).
	Channels []Channel
}

// Plant is the simulated control system. It is safe for concurrent use.
type Plant struct {
	cfg      Config
	channels map[string]Channel
	names    []string // sorted
	listed   []string // as configured (catalog order)
	// kindNames is kinds(), made once.
	kindNames []string
	index     *searchIndex

	mu        sync.Mutex
	faults    Faults
	setpoints map[string][]setpoint // by channel, in time order
	stuck     map[string]bool       // channels whose last write did not take
}

type setpoint struct {
	at    time.Time
	value float64
}

// New returns a simulator.
func New(cfg Config) (*Plant, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Retention == 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.ArchiveInterval == 0 {
		cfg.ArchiveInterval = DefaultArchiveInterval
	}
	if cfg.MaxPoints == 0 {
		cfg.MaxPoints = DefaultMaxPoints
	}
	switch {
	case cfg.Retention < 0, cfg.ArchiveInterval < 0:
		return nil, fmt.Errorf("%w: retention and archive interval must be positive", ErrInvalidConfig)
	case cfg.MaxPoints < 2:
		return nil, fmt.Errorf("%w: max points must be at least 2, got %d", ErrInvalidConfig, cfg.MaxPoints)
	case cfg.ArchiveInterval > cfg.Retention:
		return nil, fmt.Errorf("%w: archive interval %s is longer than the retention %s", ErrInvalidConfig, cfg.ArchiveInterval, cfg.Retention)
	}
	chans := cfg.Channels
	if chans == nil {
		chans = Catalog()
	}
	p := &Plant{cfg: cfg, channels: make(map[string]Channel, len(chans)), faults: cfg.Faults,
		setpoints: map[string][]setpoint{}, stuck: map[string]bool{}}
	for _, c := range chans {
		if c.Name == "" {
			return nil, fmt.Errorf("%w: a channel has no name", ErrInvalidConfig)
		}
		if _, dup := p.channels[c.Name]; dup {
			return nil, fmt.Errorf("%w: channel %s defined twice", ErrInvalidConfig, c.Name)
		}
		if c.Writable && c.Low > c.High {
			return nil, fmt.Errorf("%w: channel %s has low limit %g above high limit %g", ErrInvalidConfig, c.Name, c.Low, c.High)
		}
		p.channels[c.Name] = c
		p.names = append(p.names, c.Name)
	}
	p.listed = slices.Clone(p.names)
	p.kindNames = p.kinds()
	sort.Strings(p.names)
	p.index = searchIndexFor(p.names, p.channels)
	return p, nil
}

// Now returns the simulator's current time.
func (p *Plant) Now() time.Time { return p.cfg.Now() }

// Channels lists every channel name, sorted.
func (p *Plant) Channels() []string { return slices.Clone(p.names) }

// Channel returns a channel's definition.
func (p *Plant) Channel(name string) (Channel, bool) {
	c, ok := p.channels[name]
	return c, ok
}

// InjectFaults replaces the pending faults.
func (p *Plant) InjectFaults(f Faults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Reading is a channel's value at a time.
type Reading struct {
	Channel string    `json:"channel"`
	Value   float64   `json:"value"`
	Units   string    `json:"units"`
	Time    time.Time `json:"time"`
}

// Read returns a channel's current value.
func (p *Plant) Read(name string) (Reading, error) {
	c, ok := p.channels[name]
	if !ok {
		return Reading{}, &ChannelError{Op: "read", Channel: name, Err: ErrUnknownChannel}
	}
	p.mu.Lock()
	timeout := take(&p.faults.ReadTimeouts)
	p.mu.Unlock()
	if timeout {
		return Reading{}, &ChannelError{Op: "read", Channel: name, Err: ErrTimeout}
	}
	now := p.cfg.Now().Truncate(time.Second)
	return Reading{Channel: name, Value: p.valueAt(c, now), Units: c.Units, Time: now}, nil
}

// Write sets a writable channel to value and returns the value it had
// before. It refuses unknown and read-only channels and values outside the
// limits (a *LimitError); nothing is written then.
func (p *Plant) Write(name string, value float64) (old float64, err error) {
	c, ok := p.channels[name]
	if !ok {
		return 0, &ChannelError{Op: "write", Channel: name, Err: ErrUnknownChannel}
	}
	if !c.Writable {
		return 0, &ChannelError{Op: "write", Channel: name, Err: ErrNotWritable}
	}
	if math.IsNaN(value) || math.IsInf(value, 0) || value < c.Low || value > c.High {
		return 0, &LimitError{Channel: name, Value: value, Low: c.Low, High: c.High, Units: c.Units}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if take(&p.faults.WriteTimeouts) {
		return 0, &ChannelError{Op: "write", Channel: name, Err: ErrTimeout}
	}
	now := p.cfg.Now()
	old = p.setpointAtLocked(c, now)
	if p.faults.StuckWrites {
		p.stuck[name] = true
		return old, nil
	}
	p.setpoints[name] = append(p.setpoints[name], setpoint{at: now, value: value})
	return old, nil
}

// Setpoint returns the value a channel is set to now, without noise or drift.
func (p *Plant) Setpoint(name string) (float64, error) {
	c, ok := p.channels[name]
	if !ok {
		return 0, &ChannelError{Op: "read", Channel: name, Err: ErrUnknownChannel}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.setpointAtLocked(c, p.cfg.Now()), nil
}

// SetpointAt returns a channel's setpoint at an earlier time t, from the
// archive: ErrNoData when t is in the future or older than the retention.
func (p *Plant) SetpointAt(name string, t time.Time) (float64, error) {
	c, ok := p.channels[name]
	if !ok {
		return 0, &ChannelError{Op: "archive", Channel: name, Err: ErrUnknownChannel}
	}
	now := p.cfg.Now()
	if t.After(now) || t.Before(now.Add(-p.cfg.Retention)) {
		return 0, &ChannelError{Op: "archive", Channel: name,
			Err: fmt.Errorf("%w (at %s; the archive keeps %s)", ErrNoData, t.UTC().Format(time.RFC3339), p.cfg.Retention)}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.setpointAtLocked(c, t), nil
}

func (p *Plant) setpointAtLocked(c Channel, t time.Time) float64 {
	v := c.Nominal
	for _, s := range p.setpoints[c.Name] {
		if s.at.After(t) {
			break
		}
		v = s.value
	}
	return v
}

// valueAt is the channel's value at t: setpoint + drift + noise, a pure
// function of (seed, channel, setpoint history, t).
func (p *Plant) valueAt(c Channel, t time.Time) float64 {
	p.mu.Lock()
	base := p.setpointAtLocked(c, t)
	p.mu.Unlock()
	return base + c.Drift*driftAt(c.Name, t) + c.Noise*unitNoise(p.cfg.Seed, c.Name, t.Unix())
}
