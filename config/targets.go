package config

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// targetName is a target's name: a word, as the API and the audit name it.
var targetName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// validateTargets checks control_system.targets and control_system.target
// as agent.New would, with the file's lines.
func (d *decoder) validateTargets(cs ControlSystem) {
	if len(cs.Targets) == 0 {
		if cs.Target != "" {
			d.bad("control_system.target", "names %q but control_system.targets is empty", cs.Target)
		}
		return
	}
	names := make([]string, 0, len(cs.Targets))
	for n := range cs.Targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t, key := cs.Targets[n], "control_system.targets."+n
		if !targetName.MatchString(n) {
			d.bad(key, "is not a target name (lower case letters, digits, _ and -)")
		}
		switch t.Approval {
		case "", "always":
		case "none":
			if !t.Simulated {
				d.bad(key+".approval", "none is only allowed with simulated: true (every write to a real machine asks a human)")
			}
		default:
			d.bad(key+".approval", "must be always or none, got %q", t.Approval)
		}
		if t.MaxWritesPerTurn < 0 {
			d.bad(key+".max_writes_per_turn", "must not be negative, got %d", t.MaxWritesPerTurn)
		}
	}
	if !slices.Contains(names, cs.Target) {
		d.bad("control_system.target", "must name the default target, one of %s (got %q)", strings.Join(names, ", "), cs.Target)
	}
}
