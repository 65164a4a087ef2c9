package effectcrash

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/capgraph/capgraph/capabilities"
)

// The machine of the test is a journal file: every real effect appends one
// line (O_APPEND, then fsync) before anything else happens, so the parent
// can count the effects of every attempt after any kill. A second file,
// calls, gets a line each time a capability (or MCP tool) is called at all,
// effect or not, so the parent can tell "called again" from "acted again".

// entry is one journal or calls line.
type entry struct {
	// Key is the attempt's idempotency key (journal capabilities; an MCP
	// tool is not given one).
	Key    string  `json:"key,omitempty"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	// By is the capability or MCP tool that wrote the line.
	By string `json:"by"`
}

// appendLine appends e to the file at path durably.
func appendLine(path string, e entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readLines reads every line of the file at path (none when it does not
// exist). A torn last line cannot happen (one write per line, fsynced
// before the writer goes on), so any line that does not parse is an error.
func readLines(path string) ([]entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: line %q: %w", path, sc.Text(), err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// initialValue is what every target reads before anything was written.
const initialValue = 1.0

// machine is the journal seen as the machine: the last value written to a
// target is its value.
type machine struct{ journal, calls string }

func (m *machine) value(target string) (float64, error) {
	lines, err := readLines(m.journal)
	if err != nil {
		return 0, err
	}
	v := initialValue
	for _, e := range lines {
		if e.Target == target {
			v = e.Value
		}
	}
	return v, nil
}

func (m *machine) hasKey(key string) (bool, error) {
	lines, err := readLines(m.journal)
	if err != nil {
		return false, err
	}
	for _, e := range lines {
		if e.Key == key {
			return true, nil
		}
	}
	return false, nil
}

// The journal capabilities: one per way of settling an attempt in doubt.
const (
	// variantReadback reads the target's value back (the last journal line
	// for it): compared with the value asked and the value before.
	variantReadback = "readback"
	// variantReconcile looks its idempotency key up in the journal.
	variantReconcile = "reconcile"
	// variantBlind can do neither: an attempt in doubt is unconfirmed.
	variantBlind = "blind"
	// variantIdempotent deduplicates by key, as an API taking an
	// idempotency key does: it may simply run again.
	variantIdempotent = "idempotent"
	// variantMCPOnce is a stdio MCP tool without idempotentHint, whose call
	// appends to the journal.
	variantMCPOnce = "mcp_once"
	// variantMCPIdem is a stdio MCP tool with idempotentHint: it sets a
	// value, and setting it to what it already is changes nothing.
	variantMCPIdem = "mcp_idem"
)

var (
	journalVariants = []string{variantReadback, variantReconcile, variantBlind, variantIdempotent}
	mcpVariants     = []string{variantMCPOnce, variantMCPIdem}
)

// mcpServerName is the MCP server's name in the configuration, and so the
// prefix of its capabilities.
const mcpServerName = "journal"

// MCP tool names on the server.
const (
	toolAppend = "append_entry" // not idempotent
	toolSet    = "set_value"    // idempotentHint
)

// capabilityOf is the capability a variant's turns plan.
func capabilityOf(variant string) string {
	switch variant {
	case variantMCPOnce:
		return mcpServerName + "_" + toolAppend
	case variantMCPIdem:
		return mcpServerName + "_" + toolSet
	}
	return "set_" + variant
}

// hooks is where a child stops dead, at one point of an attempt, for the
// parent to kill it there (see points).
type hooks interface {
	// at blocks forever if the attempt on target is to be killed at point.
	at(point, target string)
}

// journalCapability is the capability of a journal variant: it sets
// parameters.target to parameters.value, an effect that is one journal line.
func journalCapability(variant string, m *machine, h hooks) (capabilities.Capability, error) {
	name := capabilityOf(variant)
	d := capabilities.Definition{
		Name: name, Description: "Set a magnet current (test journal, " + variant + ")", Provides: []string{"SETPOINT"},
		SideEffects: true,
		Action: func(st capabilities.Step) (capabilities.Action, error) {
			target, value, err := targetValue(st)
			if err != nil {
				return capabilities.Action{}, err
			}
			return capabilities.Action{Changes: []capabilities.Change{{Target: target, Value: value, Unit: "A"}},
				Summary: fmt.Sprintf("set %s to %g A", target, value)}, nil
		},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			target, value, err := targetValue(st)
			if err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			if err := appendLine(m.calls, entry{Key: st.IdempotencyKey, Target: target, Value: value, By: name}); err != nil {
				return capabilities.Output{}, capabilities.NotApplied(err)
			}
			h.at(pointBeforeEffect, target)
			if variant == variantIdempotent {
				// The API deduplicates by key: a second call with a key it
				// has seen acts no more.
				seen, err := m.hasKey(st.IdempotencyKey)
				if err != nil {
					return capabilities.Output{}, err
				}
				if seen {
					return setResult(target, value), nil
				}
			}
			if err := appendLine(m.journal, entry{Key: st.IdempotencyKey, Target: target, Value: value, By: name}); err != nil {
				return capabilities.Output{}, err
			}
			h.at(pointAfterEffect, target)
			return setResult(target, value), nil
		},
	}
	switch variant {
	case variantReadback:
		d.Readback = func(ctx context.Context, a capabilities.Action) ([]capabilities.Reading, error) {
			var out []capabilities.Reading
			for _, ch := range a.Changes {
				v, err := m.value(ch.Target)
				if err != nil {
					return nil, err
				}
				out = append(out, capabilities.Reading{Target: ch.Target, Value: v, Unit: "A"})
			}
			return out, nil
		}
	case variantReconcile:
		d.Reconcile = func(ctx context.Context, st capabilities.Step, a capabilities.Action) (capabilities.Outcome, error) {
			seen, err := m.hasKey(st.IdempotencyKey)
			switch {
			case err != nil:
				return capabilities.OutcomeUnconfirmed, err
			case seen:
				return capabilities.OutcomeConfirmed, nil
			}
			return capabilities.OutcomeFailed, nil
		}
	case variantIdempotent:
		d.Idempotent = true
	}
	return capabilities.Define(d), nil
}

func targetValue(st capabilities.Step) (string, float64, error) {
	target, err := capabilities.Param(st, "target", "")
	if err != nil {
		return "", 0, err
	}
	value, err := capabilities.Param(st, "value", 0.0)
	if err != nil {
		return "", 0, err
	}
	if target == "" {
		return "", 0, errors.New("no target")
	}
	return target, value, nil
}

func setResult(target string, value float64) capabilities.Output {
	return capabilities.Result("SETPOINT", map[string]any{"target": target, "value": value}, fmt.Sprintf("%s set to %g A", target, value))
}
