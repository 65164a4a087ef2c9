package sqlrow

import (
	"encoding/json"
	"fmt"
)

// JSONArg is the column value of v: nil (NULL) when v is empty, its JSON text
// otherwise.
func JSONArg[T any](v []T) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	return marshal(v)
}

// MapArg is JSONArg for a map (metadata and metadata filters).
func MapArg(m map[string]string) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	return marshal(m)
}

func marshal(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// Metadata decodes a metadata column; NULL (empty b) and "{}" are nil.
func Metadata(b []byte) (map[string]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var out map[string]string
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("corrupt metadata column: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// Strings decodes a JSON list column named column; NULL and "[]" are nil.
func Strings(b []byte, column string) ([]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("corrupt %s column: %w", column, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// OptionalString is s as a query argument, NULL when empty (an optional
// key column: unique among the rows that have one).
func OptionalString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
