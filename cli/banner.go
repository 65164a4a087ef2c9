package cli

import (
	"context"
	"fmt"
	"github.com/capgraph/capgraph/config"
	"io"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
)

// fact is one line of what serve and chat say about their set-up.
type fact struct{ label, value string }

// facts says what the command runs with: the configuration file (or the
// built-in defaults), the store, the models (or offline mode) and whether
// writes are enabled — and how to enable them.
func (c *cmdEnv) facts(ctx context.Context) []fact {
	file := "none: the built-in defaults (no " + DefaultConfigFile + " here; --config FILE to use one)"
	if c.cfgPath != "" {
		file = c.cfgPath
	}
	return []fact{
		{"configuration", file},
		{"store", c.spec.String()},
		{"models", c.modelsText()},
		{"writes", c.writesText(ctx)},
	}
}

// writeFacts prints facts as aligned "label: value" lines under indent.
func writeFacts(w io.Writer, indent string, facts []fact, labelWidth int) {
	for _, f := range facts {
		fmt.Fprintf(w, "%s%-*s %s\n", indent, labelWidth, f.label+":", f.value)
	}
}

// modelsText names the model of each role, roles sharing one together:
// "openai gpt-4o-mini (every role)", or "none: offline mode …".
func (c *cmdEnv) modelsText() string {
	if c.offline() {
		return "none: offline mode (set models: in " + DefaultConfigFile + " to use an LLM)"
	}
	var order []string
	byModel := map[string][]string{}
	roles := slices.DeleteFunc(llm.Roles(), func(r llm.Role) bool { return r == llm.RoleDefault })
	for _, r := range roles {
		m, ok := c.cfg.ModelFor(string(r))
		if !ok {
			continue
		}
		name := m.Provider + " " + m.Model
		if m.BaseURL != "" {
			name += " at " + m.BaseURL
		}
		if _, seen := byModel[name]; !seen {
			order = append(order, name)
		}
		byModel[name] = append(byModel[name], string(r))
	}
	var parts []string
	for _, name := range order {
		if of := byModel[name]; len(of) == len(roles) {
			parts = append(parts, name+" (every role)")
		} else {
			parts = append(parts, name+" ("+strings.Join(of, ", ")+")")
		}
	}
	s := strings.Join(parts, "; ")
	if c.cfg.Fallback == "offline" {
		s += "; offline answers when a provider cannot be reached"
	}
	return s
}

// writesText says whether the capabilities with side effects may act, and
// how to let them.
func (c *cmdEnv) writesText(ctx context.Context) string {
	var writers []string
	if reg, err := c.registry(ctx); err == nil {
		for _, capb := range reg.All() {
			if capabilities.HasSideEffects(capb) {
				writers = append(writers, capb.Name())
			}
		}
	}
	slices.Sort(writers)
	file := DefaultConfigFile
	if c.cfgPath != "" {
		file = c.cfgPath
	}
	names, verb, it := strings.Join(writers, ", "), "is", "it"
	if len(writers) > 1 {
		verb, it = "are", "them"
	}
	switch {
	case len(writers) == 0:
		return "none of the capabilities writes"
	case c.cfg.ControlSystem.WritesEnabled && len(c.cfg.ControlSystem.Targets) > 0:
		return "enabled: " + names + " may act on the " + c.cfg.ControlSystem.Target + " target (" + targetsText(c.cfg.ControlSystem.Targets) + ")"
	case c.cfg.ControlSystem.WritesEnabled:
		return "enabled: " + names + " may act, each change after a human's approval"
	}
	return "disabled: " + names + " " + verb + " refused; to allow " + it + ", set control_system.writes_enabled: true in " + file +
		" (each change still waits for a human's approval)"
}

// targetsText is each configured target's posture, by name: "live: writes
// on, every change approved; simulator (simulated): writes on, no approval".
func targetsText(ts map[string]config.Target) string {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		t := ts[n]
		s := n
		if t.Simulated {
			s += " (simulated)"
		}
		switch {
		case !t.WritesEnabled:
			s += ": writes off"
		case t.Approval == "none":
			s += ": writes on, no approval"
		default:
			s += ": writes on, every change approved"
		}
		parts[i] = s
	}
	return strings.Join(parts, "; ")
}
