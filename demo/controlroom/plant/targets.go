package plant

import (
	"fmt"
	"sort"

	"github.com/capgraph/capgraph/capabilities"
)

// Targets are plant instances by target name — the demo's live machine
// and its simulator (capabilities.TargetLive, TargetSimulator), two plants
// made alike — that channel_read and channel_write act on by the turn's
// target (capabilities.Step.Target). The framework checks each target's
// posture (writes, approval, limits) before a write reaches a plant.
type Targets map[string]*Plant

// on is the plant of target: def when there are no targets; an error for
// a target this application does not have (never another plant).
func (t Targets) on(def *Plant, target string) (*Plant, error) {
	if len(t) == 0 {
		return def, nil
	}
	p, ok := t[target]
	if !ok {
		return nil, fmt.Errorf("plant: no target %q (targets: %v)", target, t.names())
	}
	return p, nil
}

func (t Targets) names() []string {
	out := make([]string, 0, len(t))
	for n := range t {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Targets names the targets channel_write acts on (capabilities.Targeter).
func (w *ChannelWrite) Targets() []string { return w.targets.names() }

// Targets names the targets channel_read reads.
func (r *ChannelRead) Targets() []string { return r.targets.names() }

// CapabilitiesOn returns the control-room capabilities over several
// targets: channel_read and channel_write act on the turn's target's plant,
// channel_finding and archiver_retrieval use the default target's (the
// plants share their catalog).
func CapabilitiesOn(t Targets, defaultTarget string) ([]capabilities.Capability, error) {
	def, ok := t[defaultTarget]
	if !ok {
		return nil, fmt.Errorf("plant: the default target %q has no plant (targets: %v)", defaultTarget, t.names())
	}
	caps := Capabilities(def)
	for _, c := range caps {
		switch c := c.(type) {
		case *ChannelWrite:
			c.targets = t
		case *ChannelRead:
			c.targets = t
		}
	}
	return caps, nil
}
