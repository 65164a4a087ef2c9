package logging

import "fmt"

// Missing is the value given to an odd trailing key.
const Missing = "(MISSING)"

// Fields turns alternating keyvals into a map, the form most logging
// libraries take. Later duplicates win. Adapters share it so every
// implementation treats malformed keyvals the same way.
func Fields(keyvals ...any) map[string]any {
	m := make(map[string]any, (len(keyvals)+1)/2)
	for i := 0; i < len(keyvals); i += 2 {
		k, ok := keyvals[i].(string)
		if !ok {
			k = fmt.Sprint(keyvals[i])
		}
		if i+1 < len(keyvals) {
			m[k] = keyvals[i+1]
		} else {
			m[k] = Missing
		}
	}
	return m
}
