package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/llm/replytext"
)

// extractJSON returns the JSON object of a model reply that has the keys
// the caller expects (replytext.Object): reasoning blocks, code fences and
// prose around it are tolerated, and an object in the reasoning or the prose
// with other keys does not hide it. strictObject then checks it strictly.
func extractJSON(reply string, keys ...string) (json.RawMessage, error) {
	return replytext.Object(reply, keys...)
}

// strictObject decodes an object and rejects keys not in allowed. Keys are
// compared exactly: encoding/json would fold "Capability" into "capability".
// raw is valid JSON (extractJSON's object or a value within it), so an
// object with only allowed keys is split into its members without decoding
// them; anything else is decoded, for the error.
func strictObject(raw json.RawMessage, where string, allowed ...string) (map[string]json.RawMessage, error) {
	fast := make(map[string]json.RawMessage, len(allowed))
	if members(raw, func(k string, v []byte) bool {
		fast[k] = v
		return slices.Contains(allowed, k)
	}) {
		return fast, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s must be a JSON object: %w", where, err)
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("%s has unknown key(s) %s (keys are case-sensitive; allowed: %s)",
			where, quoteAll(unknown), strings.Join(allowed, ", "))
	}
	return m, nil
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}

// field decodes one value of an object into v, naming it on failure.
func field(m map[string]json.RawMessage, key, where string, v any) (bool, error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	switch p := v.(type) { // the common cases, without a decoder
	case *string:
		if s, ok := jsonText(raw); ok {
			*p = s
			return true, nil
		}
	case *bool:
		if string(raw) == "true" || string(raw) == "false" {
			*p = string(raw) == "true"
			return true, nil
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if problem, ok := outOfRange(te); ok {
				return true, fmt.Errorf("%s: %q %s", where, key, problem)
			}
			return true, fmt.Errorf("%s: %q must be %s, got %s", where, key, te.Type, te.Value)
		}
		return true, fmt.Errorf("%s: %q: %w", where, key, err)
	}
	return true, nil
}
