package cli_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
)

// The commands' own test application: a small control room of three
// channels with the four capabilities a control-room application has
// (channel_finding, channel_read, archiver_retrieval, channel_write), and a
// trio from an error tour (a flaky sensor, a corrupt state, a quota hog).
// The command's default application (demo/controlroom) has its own tests;
// these fixtures keep the library's tests independent of it.

// roomChannel is one channel of the test room.
type roomChannel struct {
	name, desc, units string
	value             float64 // the nominal value (a setpoint for a writable channel)
	writable          bool
	low, high         float64
	words             []string // what an operator calls it
}

var roomChannels = []roomChannel{
	{name: "SR:DCCT:CURRENT", desc: "storage ring beam current (DCCT)", units: "mA", value: 500.2,
		words: []string{"beam", "current", "dcct", "storage", "ring"}},
	{name: "BTS:MAG:Q1:CURRENT", desc: "BTS transfer line quadrupole Q1 current", units: "A", value: 92, writable: true, low: 0, high: 120,
		words: []string{"bts", "q1", "quadrupole", "magnet", "current", "transfer", "line"}},
	{name: "SR:RF:CAV1:VOLT", desc: "RF cavity 1 voltage", units: "kV", value: 600,
		words: []string{"rf", "cavity", "voltage", "cav1"}},
}

// room is the test room's state: the setpoints written, and faults to inject.
type room struct {
	mu        sync.Mutex
	setpoints map[string]float64
	// readTimeouts is how many reads time out before reads answer.
	readTimeouts int
	// now is the room's clock: reads and archives are stamped with it.
	now time.Time
}

var errReadTimeout = errors.New("the control system did not answer in time")

func newRoom(readTimeouts int) *room {
	return &room{setpoints: map[string]float64{}, readTimeouts: readTimeouts, now: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
}

func channelOf(name string) (roomChannel, bool) {
	for _, c := range roomChannels {
		if c.name == name {
			return c, true
		}
	}
	return roomChannel{}, false
}

func (r *room) read(name string) (float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.readTimeouts > 0 {
		r.readTimeouts--
		return 0, errReadTimeout
	}
	c, ok := channelOf(name)
	if !ok {
		return 0, fmt.Errorf("no channel %s", name)
	}
	if v, ok := r.setpoints[name]; ok {
		return v, nil
	}
	return c.value, nil
}

// find returns the channels whose words the text uses most.
func find(text string) []string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	best, out := 0, []string(nil)
	for _, c := range roomChannels {
		n := 0
		for _, w := range words {
			for _, cw := range c.words {
				if w == cw {
					n++
				}
			}
		}
		switch {
		case n > best:
			best, out = n, []string{c.name}
		case n == best && n > 0:
			out = append(out, c.name)
		}
	}
	return out
}

// stepChannels are the channels of a step's CHANNEL_ADDRESSES inputs.
func stepChannels(st capabilities.Step) ([]string, error) {
	lists, err := capabilities.Key[[]string]("CHANNEL_ADDRESSES").Inputs(st)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out, nil
}

var toValue = regexp.MustCompile(`(?i)\bto\s*([-+]?\d+(?:\.\d+)?)`)

// roomWrite is the write a step asks for.
type roomWrite struct {
	c           roomChannel
	old, target float64
}

func (w roomWrite) text() string {
	return fmt.Sprintf("%s from %.2f → %.2f %s", w.c.name, w.old, w.target, w.c.units)
}

func (r *room) planWrite(st capabilities.Step) (roomWrite, error) {
	chans, err := stepChannels(st)
	if err != nil {
		return roomWrite{}, err
	}
	if len(chans) != 1 {
		return roomWrite{}, fmt.Errorf("one value for %d channels", len(chans))
	}
	c, _ := channelOf(chans[0])
	m := toValue.FindStringSubmatch(st.Task + " " + st.TaskObjective)
	if m == nil {
		return roomWrite{}, errors.New(`no value to write (say "to <number>")`)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	r.mu.Lock()
	old, ok := r.setpoints[c.name]
	r.mu.Unlock()
	if !ok {
		old = c.value
	}
	return roomWrite{c: c, old: old, target: v}, nil
}

// capabilities returns the room's four capabilities.
func (r *room) capabilities() ([]capabilities.Capability, error) {
	finding := capabilities.Define(capabilities.Definition{
		Name:        "channel_finding",
		Description: "Find the control-system channel names (process variable addresses) that match a description such as \"beam current\".",
		Provides:    []string{"CHANNEL_ADDRESSES"},
		ClassifierGuide: &capabilities.ClassifierGuide{
			Instructions: "Select when the user refers to accelerator quantities or devices by description and their channel names must be found first.",
			Examples: []capabilities.ClassifierExample{
				{Query: "What is the beam current?", Result: true, Reason: "the beam current channel must be found"},
				{Query: "Set the quadrupole Q1 current to 105 A", Result: true, Reason: "the Q1 channel must be found"},
			}},
		Run: func(_ context.Context, st capabilities.Step) (capabilities.Output, error) {
			chans := find(st.Task + " " + st.TaskObjective)
			if len(chans) == 0 {
				return capabilities.Output{}, capabilities.NewError(capabilities.Critical, capabilities.KindNotFound, "No channel matches the description.", nil)
			}
			return capabilities.Result("CHANNEL_ADDRESSES", chans, "found "+strings.Join(chans, ", ")), nil
		},
	})
	multiple := []capabilities.Requirement{{Type: "CHANNEL_ADDRESSES", Cardinality: capabilities.Multiple}}
	read := capabilities.Define(capabilities.Definition{
		Name:        "channel_read",
		Description: "Read the present live value of control-system channels now: the beam current, a magnet current or a voltage at this moment.",
		Provides:    []string{"CHANNEL_VALUES"}, Requires: multiple,
		ClassifierGuide: &capabilities.ClassifierGuide{
			Instructions: "Select when the user names a machine quantity and wants its present, live value (not its history over the last hours; not to set or change it).",
			Examples: []capabilities.ClassifierExample{
				{Query: "What is the beam current?", Result: true, Reason: "a live value"},
				{Query: "Show me the beam current over the last day", Result: false, Reason: "history"},
				{Query: "Set the Q1 current to 105 A", Result: false, Reason: "a write"},
			}},
		Retry: capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaxInterval: 5 * time.Second, NonRetryable: []string{capabilities.KindNotFound, capabilities.KindInvalidInput}},
		Classify: func(err error, _ capabilities.ErrorContext) capabilities.Classification {
			if errors.Is(err, errReadTimeout) {
				return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout, UserMessage: "The control system did not answer the read in time."}
			}
			return capabilities.Classification{}
		},
		Run: func(_ context.Context, st capabilities.Step) (capabilities.Output, error) {
			chans, err := stepChannels(st)
			if err != nil {
				return capabilities.Output{}, err
			}
			var parts []string
			values := map[string]float64{}
			for _, name := range chans {
				v, err := r.read(name)
				if err != nil {
					return capabilities.Output{}, err
				}
				c, _ := channelOf(name)
				values[name] = v
				parts = append(parts, fmt.Sprintf("%s = %.1f %s (%s), read at %s", name, v, c.units, c.desc, r.now.Format("15:04:05")))
			}
			return capabilities.Result("CHANNEL_VALUES", values, strings.Join(parts, "; ")), nil
		},
	})
	archive := capabilities.Define(capabilities.Definition{
		Name:        "archiver_retrieval",
		Description: "Retrieve the archived history of control-system channels over a time range: trends, statistics, how a value changed over the last hours.",
		Provides:    []string{"ARCHIVER_DATA"}, Requires: multiple,
		ClassifierGuide: &capabilities.ClassifierGuide{
			Instructions: "Select when the user asks for history, a trend or how a value changed over a time range.",
			Examples: []capabilities.ClassifierExample{
				{Query: "Show me the RF cavity voltage over the last 2 hours", Result: true, Reason: "history"},
				{Query: "What is the beam current?", Result: false, Reason: "a live value"},
			}},
		Run: func(_ context.Context, st capabilities.Step) (capabilities.Output, error) {
			chans, err := stepChannels(st)
			if err != nil {
				return capabilities.Output{}, err
			}
			var parts []string
			for _, name := range chans {
				c, _ := channelOf(name)
				parts = append(parts, fmt.Sprintf("%s: 120 samples, min %.1f, max %.1f, mean %.1f %s", name, c.value-1, c.value+1, c.value, c.units))
			}
			return capabilities.Result("ARCHIVER_DATA", parts, strings.Join(parts, "; ")), nil
		},
	})
	write := capabilities.Define(capabilities.Definition{
		Name:        "channel_write",
		Description: "Write a new setpoint to a control-system channel: set, change or adjust a setting to a number the user gives. A human must approve first.",
		Provides:    []string{"CHANNEL_WRITE_RESULTS"}, Requires: multiple,
		SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{
			Instructions: "Select when the user asks to set, change or adjust a setting to a value.",
			Examples: []capabilities.ClassifierExample{
				{Query: "Set the quadrupole Q1 current in the BTS line to 105 A", Result: true, Reason: "a write"},
				{Query: "What is the Q1 current?", Result: false, Reason: "a read"},
			}},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			w, err := r.planWrite(st)
			if err != nil {
				return capabilities.Action{}, err
			}
			return capabilities.Action{Capability: "channel_write", Summary: "set " + w.text(),
				Changes: []capabilities.Change{{Target: w.c.name, Value: w.target, Unit: w.c.units}}}, nil
		},
		Readback: func(_ context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
			var out []capabilities.Reading
			for _, ch := range a.Changes {
				r.mu.Lock()
				v, ok := r.setpoints[ch.Target]
				r.mu.Unlock()
				if !ok {
					c, _ := channelOf(ch.Target)
					v = c.value
				}
				out = append(out, capabilities.Reading{Target: ch.Target, Value: v, Unit: ch.Unit})
			}
			return out, nil
		},
		Run: func(_ context.Context, st capabilities.Step) (capabilities.Output, error) {
			if !st.WritesEnabled {
				return capabilities.Output{}, fmt.Errorf("channel_write: %w", capabilities.ErrWritesDisabled)
			}
			w, err := r.planWrite(st)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(capabilities.NewError(capabilities.Replanning, capabilities.KindInvalidInput, err.Error(), err))
			}
			if !w.c.writable || math.IsNaN(w.target) || w.target < w.c.low || w.target > w.c.high {
				return capabilities.Output{}, capabilities.NotApplied(capabilities.NewError(capabilities.Critical, capabilities.KindLimitViolation,
					fmt.Sprintf("%.2f %s is outside the limits of %s.", w.target, w.c.units, w.c.name), nil))
			}
			r.mu.Lock()
			r.setpoints[w.c.name] = w.target
			r.mu.Unlock()
			return capabilities.Result("CHANNEL_WRITE_RESULTS", map[string]any{"channel": w.c.name, "old": w.old, "value": w.target, "readback": w.target},
				"Set "+w.text()+" (readback verified)"), nil
		},
	})
	return []capabilities.Capability{finding, read, archive, write}, nil
}

// roomApp is the commands' test application over a new room.
func roomApp(readTimeouts int) cli.App {
	r := newRoom(readTimeouts)
	return cli.App{
		Summary:  "a test control room",
		Examples: []string{"What is the beam current?", "Set the quadrupole Q1 current in the BTS line to 105 A"},
		Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
			return r.capabilities()
		},
	}
}

// controlRoom is a harness over the test room.
func controlRoom(t *testing.T) *harness { return newHarness(t, roomApp(0)) }

// tourApp is an error tour of three capabilities: flaky_sensor (times out
// twice, then answers), corrupt_state (FATAL), quota_hog (exhausts a
// resource: the run asks a human).
func tourApp() cli.App {
	quick := func(n int) capabilities.RetryPolicy {
		return capabilities.RetryPolicy{MaxAttempts: n, InitialInterval: time.Millisecond,
			MaxInterval: 5 * time.Millisecond, Jitter: capabilities.JitterNone}
	}
	def := func(name, keyword, question, desc string) capabilities.Definition {
		return capabilities.Definition{Name: name, Description: desc, Provides: []string{"READING"},
			ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use only for the " + keyword + " scenario.",
				Examples: []capabilities.ClassifierExample{{Query: question, Result: true, Reason: "the " + keyword + " scenario"}}},
			OrchestratorGuide: &capabilities.OrchestratorGuide{Instructions: "Use " + name + " alone; it needs no inputs."}}
	}
	return cli.App{Name: "tour", Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
		flaky := def("flaky_sensor", "flaky", "Read the flaky sensor", "Reads the flaky sensor, which times out twice before answering.")
		flaky.Retry = quick(4)
		flaky.Run = func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
			if s.Attempt < 3 {
				return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout,
					fmt.Sprintf("The flaky sensor timed out (attempt %d).", s.Attempt), nil)
			}
			return capabilities.Result("READING", 42.0, fmt.Sprintf("flaky_sensor answered on attempt %d", s.Attempt)), nil
		}
		corrupt := def("corrupt_state", "corrupt", "Check the corrupt state", "Touches the corrupt state, which aborts the run.")
		corrupt.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, capabilities.NewError(capabilities.Fatal, "corrupt_state",
				"The capability's internal state is corrupt; the run must stop.", nil)
		}
		quota := def("quota_hog", "quota", "Run the quota hog", "Runs the quota hog, which exhausts its disk quota.")
		quota.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Output{}, fmt.Errorf("the quota hog used up its disk quota: %w", capabilities.ErrResourceExhausted)
		}
		var out []capabilities.Capability
		for _, d := range []capabilities.Definition{flaky, corrupt, quota} {
			c := capabilities.Define(d)
			out = append(out, c)
		}
		return out, nil
	}}
}
