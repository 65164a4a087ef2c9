package nodes

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
)

// expandDependencies adds, transitively, the provider of every context type
// a selected capability requires and no selected capability provides (the
// first registered provider that allow admits). When reuse is set, a type
// already in the context store needs no provider (the planner may reuse it).
// It returns the full selection in registration order and the capabilities
// added.
func expandDependencies(reg *capabilities.Registry, selected []string, store capabilities.ContextStore, reuse bool, allow func(string) bool) (all, added []string) {
	in := map[string]bool{}
	for _, n := range selected {
		in[n] = true
	}
	queue := slices.Clone(selected)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		c, ok := reg.Get(name)
		if !ok {
			continue
		}
		for _, q := range c.Requires() {
			if reuse && store.Has(q.Type) {
				continue
			}
			if providedBy(reg, in, q.Type) {
				continue
			}
			provs := slices.DeleteFunc(slices.Clone(reg.Providers(q.Type)), func(p string) bool { return !allow(p) })
			if len(provs) == 0 {
				continue
			}
			p := provs[0]
			in[p] = true
			added = append(added, p)
			queue = append(queue, p)
		}
	}
	for _, n := range reg.Names() {
		if in[n] {
			all = append(all, n)
		}
	}
	return all, added
}

func providedBy(reg *capabilities.Registry, in map[string]bool, typ string) bool {
	for n := range in {
		if c, ok := reg.Get(n); ok && slices.Contains(c.Provides(), typ) {
			return true
		}
	}
	return false
}

// dependencyPlan is the offline planner: every active capability becomes a
// step after the steps providing its required types (topological order; a
// provider shared by several steps runs once), reading missing types from
// the context store when no active capability provides them; the plan ends
// with respond. A capability whose requirement nothing satisfies is left out
// and reported in skipped. A side-effecting capability is planned only when
// the intent is a change (the classifier withholds it otherwise; this is
// the backstop).
func dependencyPlan(reg *capabilities.Registry, active []string, store capabilities.ContextStore, task string, turn int, in intent.Intent) (steps []capabilities.PlannedStep, skipped []string) {
	allow := allowedFor(reg, in)
	activeSet := map[string]bool{}
	for _, n := range active {
		if allow(n) {
			activeSet[n] = true
		}
	}
	keyOf := map[string]string{} // capability → context key of its step
	visited := map[string]int{}  // 0 unvisited, 1 visiting, 2 done, 3 failed
	var visit func(name string, goal bool) bool
	visit = func(name string, goal bool) bool {
		switch visited[name] {
		case 1, 3:
			return false // a cycle, or already failed
		case 2:
			return true
		}
		visited[name] = 1
		c, ok := reg.Get(name)
		if !ok {
			visited[name] = 3
			return false
		}
		var inputs []capabilities.InputRef
		for _, q := range c.Requires() {
			prov := ""
			for _, p := range reg.Providers(q.Type) {
				if activeSet[p] && p != name {
					prov = p
					break
				}
			}
			if prov != "" && visit(prov, false) {
				inputs = append(inputs, capabilities.InputRef{Type: q.Type, Key: keyOf[prov]})
				continue
			}
			if e, ok := latest(store, q.Type); ok {
				inputs = append(inputs, capabilities.InputRef{Type: q.Type, Key: e.Key})
				continue
			}
			visited[name] = 3
			skipped = append(skipped, name)
			return false
		}
		key := fmt.Sprintf("%s_%d", name, turn)
		keyOf[name] = key
		objective := task
		if !goal {
			objective = providerObjective(c, task)
		}
		var params map[string]any
		if capabilities.HasSideEffects(c) {
			// The change the user's words ask for, not the task's (a model
			// may have written it): "Set Q1 to 105 A", "Change Q1 by +5 A".
			if o, p, ok := changeObjective(in); ok {
				objective, params = o, p
			}
		}
		out := ""
		if p := c.Provides(); len(p) > 0 {
			out = p[0]
		}
		steps = append(steps, capabilities.PlannedStep{ContextKey: key, Capability: name, TaskObjective: objective,
			ExpectedOutput: out, Inputs: inputs, Parameters: params})
		visited[name] = 2
		return true
	}
	// A capability is a goal when no other active capability needs what it provides.
	for _, n := range active {
		if isTerminal(n) || !activeSet[n] {
			continue
		}
		visit(n, !neededByOther(reg, n, activeSet))
	}
	steps = append(steps, respondStep(task))
	return steps, skipped
}

// changeObjective states the one change of an intent as a side-effecting
// step's objective, in the words capabilities parse ("Set Q1 to 105 A"), or
// for a relative change with parameters by and unit ("Change Q1 by +5 A":
// the capability works out the value from the value now, and the gate
// checks it against its own reading), or for a dated restore with
// parameter at ("Set Q1 back to its value at 2026-11-26T09:30:00Z": the
// capability reads its history, the gate too); false for several changes or one
// without a value or amount.
func changeObjective(in intent.Intent) (string, map[string]any, bool) {
	if !in.IsChange() || len(in.Changes) != 1 {
		return "", nil, false
	}
	c := in.Changes[0]
	target := c.Target
	if c.Refers != "" {
		target += " (" + c.Refers + ")"
	}
	unit := ""
	if c.Unit != "" {
		unit = " " + c.Unit
	}
	switch {
	case c.Value != nil:
		return "Set " + target + " to " + strconv.FormatFloat(*c.Value, 'g', -1, 64) + unit, nil, true
	case c.By != nil:
		by := strconv.FormatFloat(*c.By, 'g', -1, 64)
		if *c.By >= 0 {
			by = "+" + by
		}
		return "Change " + target + " by " + by + unit, map[string]any{"by": *c.By, "unit": c.Unit}, true
	case c.Ago > 0 && !c.At.IsZero():
		at := c.At.UTC().Format(time.RFC3339)
		return "Set " + target + " back to its value at " + at, map[string]any{"at": at}, true
	}
	return "", nil, false
}

// providerObjective is the objective of a step that only prepares another's
// input, in words a user reads in the plan: what the capability does (the
// lead clause of its description) or what it provides, then the task, kept
// verbatim so capabilities that parse the objective still find it.
func providerObjective(c capabilities.Capability, task string) string {
	what := leadClause(c.Description())
	if what == "" {
		var kinds []string
		for _, t := range c.Provides() {
			kinds = append(kinds, typeInWords(t))
		}
		what = "Get the " + strings.Join(kinds, " and ")
		if len(kinds) == 0 {
			what = "Prepare"
		}
	}
	return what + " for: " + task
}

// maxLeadClause bounds a description's lead clause used as a step's words;
// a longer one is no short step line, and the provided types say it better.
const maxLeadClause = 80

// leadClause returns a description's first clause ("Find the channel
// names" of "Find the channel names (addresses) that match…: …"), or "" when
// it is empty or too long for a step line.
func leadClause(desc string) string {
	desc = strings.TrimSpace(desc)
	cut := len(desc)
	for _, sep := range []string{". ", ": ", "; ", " (", ", ", " such as ", " that ", " which "} {
		if i := strings.Index(desc, sep); i >= 0 && i < cut {
			cut = i
		}
	}
	clause := strings.TrimRight(strings.TrimSpace(desc[:cut]), ".:;,")
	if clause == "" || len([]rune(clause)) > maxLeadClause {
		return ""
	}
	return clause
}

// typeInWords turns a context type name into words: CHANNEL_ADDRESSES →
// "channel addresses".
func typeInWords(t string) string {
	return strings.ToLower(strings.Join(strings.FieldsFunc(t, func(r rune) bool { return r == '_' || r == '-' || r == ' ' }), " "))
}

func neededByOther(reg *capabilities.Registry, name string, active map[string]bool) bool {
	c, ok := reg.Get(name)
	if !ok {
		return false
	}
	for other := range active {
		if other == name {
			continue
		}
		oc, ok := reg.Get(other)
		if !ok {
			continue
		}
		for _, q := range oc.Requires() {
			if slices.Contains(c.Provides(), q.Type) {
				return true
			}
		}
	}
	return false
}

// latest returns the most recent entry of a type (by turn, then creation).
func latest(store capabilities.ContextStore, typ string) (capabilities.ContextEntry, bool) {
	var best capabilities.ContextEntry
	found := false
	for _, e := range store[typ] {
		if !found || e.Turn > best.Turn || (e.Turn == best.Turn && e.Created.After(best.Created)) ||
			(e.Turn == best.Turn && e.Created.Equal(best.Created) && e.Key > best.Key) {
			best, found = e, true
		}
	}
	return best, found
}

// allowedFor admits every capability when the intent is a change, and only
// those without side effects otherwise.
func allowedFor(reg *capabilities.Registry, in intent.Intent) func(string) bool {
	return func(name string) bool {
		if in.IsChange() {
			return true
		}
		c, ok := reg.Get(name)
		return !ok || !capabilities.HasSideEffects(c)
	}
}

// withholdSideEffects removes the side-effecting capabilities from a
// selection when the user did not ask for a change.
func withholdSideEffects(reg *capabilities.Registry, selected []string, in intent.Intent) (kept, withheld []string) {
	allow := allowedFor(reg, in)
	for _, n := range selected {
		if allow(n) {
			kept = append(kept, n)
		} else {
			withheld = append(withheld, n)
		}
	}
	return kept, withheld
}
