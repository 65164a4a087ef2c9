package nodes

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// FuzzStrictObjectMatchesDecoding: splitting a reply's object into its
// members without decoding them gives what decoding gives (the members, or
// the same error), and field reads strings and booleans as encoding/json.
func FuzzStrictObjectMatchesDecoding(f *testing.F) {
	for _, s := range []string{
		`{"task": "What is the mean?", "depends_on_chat_history": false}`,
		`{"task": "a\"b\u00e9", "task": null, "intent": {"kind": "read"}}`,
		`{"Task": "x"}`, `{"task": 1, "depends_on_chat_history": "yes"}`, `{}`, `{"task": "\xff"}`,
		`{"capabilities": ["a", "b"]}`, "{\"task\" :\n \"x\" , \"intent\":null}",
	} {
		f.Add(s)
	}
	allowed := []string{"task", "depends_on_chat_history", "intent", "capabilities"}
	f.Fuzz(func(t *testing.T, text string) {
		raw, err := extractJSON(text, allowed...)
		if err != nil {
			return
		}
		got, gerr := strictObject(raw, "the reply", allowed...)
		var want map[string]json.RawMessage
		werr := json.Unmarshal(raw, &want)
		if werr == nil {
			for k := range want {
				if !slices.Contains(allowed, k) {
					werr = fmt.Errorf("unknown key %q", k)
				}
			}
		}
		if (gerr != nil) != (werr != nil) || gerr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: strictObject = %q, %v; decoding: %q, %v", raw, got, gerr, want, werr)
		}
		for k, v := range got {
			var s, ws string
			var b, wb bool
			_, serr := field(got, k, "the reply", &s)
			_, berr := field(got, k, "the reply", &b)
			wserr, wberr := json.Unmarshal(v, &ws), json.Unmarshal(v, &wb)
			if (serr != nil) != (wserr != nil) || (berr != nil) != (wberr != nil) || serr == nil && s != ws || berr == nil && b != wb {
				t.Fatalf("field %s = %q, %v / %v, %v; decoding: %q, %v / %v, %v", v, s, serr, b, berr, ws, wserr, wb, wberr)
			}
		}
	})
}
