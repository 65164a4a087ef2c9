package nodes

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// extractJSON returns the JSON object in a model reply. Code fences and prose
// around the object are tolerated; the first candidate that decodes wins.
func extractJSON(reply string) (json.RawMessage, error) {
	var cands []string
	rest := reply
	for {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		body := rest[i+3:]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 && !strings.ContainsAny(body[:nl], "{[") {
			body = body[nl+1:] // drop the info string ("json")
		}
		j := strings.Index(body, "```")
		if j < 0 {
			break
		}
		cands = append(cands, body[:j])
		rest = body[j+3:]
	}
	if i := strings.IndexByte(reply, '{'); i >= 0 {
		cands = append(cands, reply[i:])
	}
	if len(cands) == 0 {
		return nil, errors.New("the reply contains no JSON object")
	}
	var first error
	for _, c := range cands {
		c = strings.TrimSpace(c)
		if k := strings.IndexByte(c, '{'); k > 0 {
			c = c[k:]
		}
		dec := json.NewDecoder(strings.NewReader(c))
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil && len(raw) > 0 && raw[0] == '{' {
			return raw, nil
		}
		if err == nil {
			err = errors.New("the JSON value is not an object")
		}
		if first == nil {
			first = fmt.Errorf("invalid JSON: %w", err)
		}
	}
	return nil, first
}

// strictObject decodes an object and rejects keys not in allowed. Keys are
// compared exactly: encoding/json would fold "Capability" into "capability".
func strictObject(raw json.RawMessage, where string, allowed ...string) (map[string]json.RawMessage, error) {
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
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return true, fmt.Errorf("%s: %q must be %s, got %s", where, key, te.Type, te.Value)
		}
		return true, fmt.Errorf("%s: %q: %w", where, key, err)
	}
	return true, nil
}
