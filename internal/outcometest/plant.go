package outcometest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/capgraph/capgraph/capabilities"
)

// Magnet is one power supply of the Plant, named by what an operator types
// ("Q1") and its channel (Target).
type Magnet struct {
	Name   string
	Target string
	// Value is the current setpoint, in A.
	Value float64
	// Behaviour is how a write to it ends.
	Behaviour Behaviour
	reads     int
}

// Behaviour is how a write to a Magnet ends.
type Behaviour int

const (
	// Applies: the write is made and reads back as asked (confirmed).
	Applies Behaviour = iota
	// Interlocked: the interlock refuses the write before anything is sent
	// (failed: capabilities.NotApplied).
	Interlocked
	// Drifts: the supply takes the write but settles elsewhere (mismatch).
	Drifts
	// Drops: the connection breaks after the request was sent and the
	// channel cannot be read (unconfirmed).
	Drops
	// Wanders: the supply moves by itself to 94 A right after its value was
	// first read (the value an approval is given against), then holds; a
	// write applies. An approval given at 92 A is asked again.
	Wanders
)

// Limit is the highest current the Plant accepts, in A; a higher value is
// refused without asking a human (capabilities.ActionRefusedError).
const Limit = 120.0

// Capability is the name of the Plant's side-effecting capability.
const Capability = "set_magnet_current"

// Plant is a transfer line of five quadrupole supplies, one per Behaviour:
// Q1 applies, Q2 is interlocked, Q3 drifts, Q4 drops the connection, Q5
// wanders. Every one starts at 92 A.
type Plant struct {
	mu      sync.Mutex
	magnets []*Magnet
	writes  []string
}

// New returns the Plant with its five magnets.
func New() *Plant {
	p := &Plant{}
	for i, b := range []Behaviour{Applies, Interlocked, Drifts, Drops, Wanders} {
		n := fmt.Sprintf("Q%d", i+1)
		p.magnets = append(p.magnets, &Magnet{Name: n, Target: "BTS:MAG:" + n + ":CURRENT", Value: 92, Behaviour: b})
	}
	return p
}

// Writes lists the writes that reached a supply ("Q1=105").
func (p *Plant) Writes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.writes...)
}

func (p *Plant) magnet(name string) *Magnet {
	for _, m := range p.magnets {
		if m.Name == name || m.Target == name {
			return m
		}
	}
	return nil
}

var (
	magnetName = regexp.MustCompile(`(?i)\b(Q[1-5])\b`)
	toValue    = regexp.MustCompile(`(?i)\bto\s+([0-9]+(?:\.[0-9]+)?)`)
)

// request reads the magnet and the value a step asks for from its objective
// or the user's task.
func (p *Plant) request(st capabilities.Step) (*Magnet, float64, error) {
	var m *Magnet
	var v float64
	found := false
	for _, s := range []string{st.TaskObjective, st.Task} {
		if n := magnetName.FindStringSubmatch(s); n != nil && m == nil {
			m = p.magnet(strings.ToUpper(n[1]))
		}
		if x := toValue.FindStringSubmatch(s); x != nil && !found {
			v, _ = strconv.ParseFloat(x[1], 64)
			found = true
		}
	}
	switch {
	case m == nil:
		return nil, 0, errors.New("no magnet named (say Q1 to Q5)")
	case !found:
		return nil, 0, errors.New(`no value (say "to <number> A")`)
	}
	return m, v, nil
}

// Capabilities returns the Plant's one capability, set_magnet_current.
func (p *Plant) Capabilities() ([]capabilities.Capability, error) {
	c := capabilities.Define(capabilities.Definition{
		Name:        Capability,
		Description: "Set the current of a quadrupole magnet power supply (Q1 to Q5) of the BTS transfer line",
		Provides:    []string{"MAGNET_WRITE"},
		SideEffects: true,
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use to set a quadrupole magnet current.",
			Examples: []capabilities.ClassifierExample{{Query: "Set the Q1 current to 105 A", Result: true, Reason: "a setpoint change"}}},
		Classify: func(err error, _ capabilities.ErrorContext) capabilities.Classification {
			if errors.Is(err, capabilities.ErrNotApplied) {
				return capabilities.Classification{Severity: capabilities.Critical, Kind: "interlock",
					UserMessage: "The supply's interlock refused the write; nothing was changed."}
			}
			return capabilities.Classification{}
		},
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			m, v, err := p.request(st)
			if err != nil {
				return capabilities.Action{}, err
			}
			if v > Limit {
				return capabilities.Action{Changes: []capabilities.Change{{Target: m.Target, Value: v, Unit: "A"}}},
					&capabilities.ActionRefusedError{Reason: "limits", Message: fmt.Sprintf("%g A is above the %s supply's limit of %g A.", v, m.Name, Limit)}
			}
			return capabilities.Action{Changes: []capabilities.Change{{Target: m.Target, Value: v, Unit: "A", Tolerance: 0.05,
				Description: "quadrupole " + m.Name + " magnet current"}},
				Summary: fmt.Sprintf("set %s to %.2f A", m.Target, v)}, nil
		},
		Readback: func(_ context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			var out []capabilities.Reading
			for _, ch := range a.Changes {
				m := p.magnet(ch.Target)
				if m == nil {
					return nil, capabilities.ErrNoReadback
				}
				if m.Behaviour == Drops && p.wrote(m) {
					return nil, errors.New(m.Target + " does not answer")
				}
				if m.reads++; m.Behaviour == Wanders && m.reads == 2 {
					m.Value = 94
				}
				out = append(out, capabilities.Reading{Target: m.Target, Value: m.Value, Unit: "A"})
			}
			return out, nil
		},
		Run: func(_ context.Context, st capabilities.Step) (capabilities.Output, error) {
			m, v, err := p.request(st)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			old := m.Value
			switch m.Behaviour {
			case Interlocked:
				return capabilities.Output{}, capabilities.NotApplied(fmt.Errorf("the %s interlock is open", m.Name))
			case Drifts:
				m.Value = v - 7.5
			case Drops:
				m.Value = v
				p.writes = append(p.writes, fmt.Sprintf("%s=%g", m.Name, v))
				return capabilities.Output{}, fmt.Errorf("the connection to the %s supply broke after the request was sent", m.Name)
			default:
				m.Value = v
			}
			p.writes = append(p.writes, fmt.Sprintf("%s=%g", m.Name, v))
			return capabilities.Result("MAGNET_WRITE", map[string]any{"target": m.Target, "old": old, "new": v},
				fmt.Sprintf("%s from %.2f → %.2f A", m.Target, old, v)), nil
		},
	})
	return []capabilities.Capability{c}, nil
}

// wrote reports whether a write to m was made (p.mu held).
func (p *Plant) wrote(m *Magnet) bool {
	for _, w := range p.writes {
		if strings.HasPrefix(w, m.Name+"=") {
			return true
		}
	}
	return false
}
