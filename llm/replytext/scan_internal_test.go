package replytext

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// scanDecoding is scan as it was, with a decoder at every brace: the
// reference FuzzScanMatchesDecoder holds scan to.
func scanDecoding(text string) (objs []object, firstErr error) {
	failed := 0
	for i := 0; i < len(text) && failed < maxFailures; {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			break
		}
		start := i + j
		dec := json.NewDecoder(strings.NewReader(text[start:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			failed++
			i = start + 1
			continue
		}
		objs = append(objs, object{raw: raw, keys: topKeys(raw), brokenBefore: firstErr != nil && len(objs) == 0})
		i = start + int(dec.InputOffset())
	}
	return objs, firstErr
}

// FuzzScanMatchesDecoder: finding objects by their balanced braces and
// validating them gives what decoding at every brace gives — the same
// objects, and the same first error.
func FuzzScanMatchesDecoder(f *testing.F) {
	for _, s := range []string{
		"Here is the plan.\n```json\n{\"steps\": [{\"a\": \"}\"}]}\n```",
		`{x} {"a": 1} {"b": [1, {"c": "\"}"}]} {"d": }`,
		`{{{{ {"a": 1}`, `{"a": "unterminated`, `{"a": 1}}}{"b": 2}`, "{\"a\": \"\xff\"}", `[{"a": 1}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, gerr := scan(text)
		want, werr := scanDecoding(text)
		if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("scan(%q) = %v, %v; decoding gives %v, %v", text, got, gerr, want, werr)
		}
	})
}
