package capabilities

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrMissingInput: a step's required input is not in the context store.
var ErrMissingInput = errors.New("required input missing")

// ContextEntry is one stored value: the typed output of a step, kept across
// turns so later turns can reuse it.
type ContextEntry struct {
	Type          string          `json:"type"`
	Key           string          `json:"key"`
	Value         json.RawMessage `json:"value"`
	Summary       string          `json:"summary,omitempty"`
	TaskObjective string          `json:"task_objective,omitempty"`
	Capability    string          `json:"capability,omitempty"`
	Turn          int             `json:"turn,omitempty"`
	Created       time.Time       `json:"created"`
}

// ContextStore holds context entries by type, then key. It is part of the
// agent state; treat it as immutable and change it with Put on a copy.
type ContextStore map[string]map[string]ContextEntry

// Get returns the entry of a type and key.
func (cs ContextStore) Get(typ, key string) (ContextEntry, bool) {
	e, ok := cs[typ][key]
	return e, ok
}

// Put returns a store with e added or replaced, sharing nothing mutable with cs.
func (cs ContextStore) Put(entries ...ContextEntry) ContextStore {
	out := make(ContextStore, len(cs)+len(entries))
	for t, m := range cs {
		out[t] = m
	}
	for _, e := range entries {
		m := make(map[string]ContextEntry, len(out[e.Type])+1)
		for k, v := range out[e.Type] {
			m[k] = v
		}
		m[e.Key] = e
		out[e.Type] = m
	}
	return out
}

// Entries lists every entry, sorted by type then key.
func (cs ContextStore) Entries() []ContextEntry {
	var out []ContextEntry
	for _, m := range cs {
		for _, e := range m {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b ContextEntry) int {
		if a.Type != b.Type {
			if a.Type < b.Type {
				return -1
			}
			return 1
		}
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return out
}

// Has reports whether any entry of the type exists.
func (cs ContextStore) Has(typ string) bool { return len(cs[typ]) > 0 }

// decode decodes the entry's value into a T.
func decode[T any](e ContextEntry) (T, error) {
	var v T
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return v, fmt.Errorf("context %s.%s: decode: %w", e.Type, e.Key, err)
	}
	return v, nil
}

// Param returns a step parameter converted to T through JSON (so numbers
// become int or float64 as T asks), or def when absent.
func Param[T any](step Step, name string, def T) (T, error) {
	raw, ok := step.Parameters[name]
	if !ok || raw == nil {
		return def, nil
	}
	if v, ok := raw.(T); ok {
		return v, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return def, fmt.Errorf("parameter %q: %w", name, err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return def, fmt.Errorf("parameter %q has the wrong type: %w", name, err)
	}
	return v, nil
}
