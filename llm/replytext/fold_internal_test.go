package replytext

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
)

// indexFold finds what strings.Index finds in the lowered text, at the same
// byte offset, without lowering it.
func TestIndexFoldIsIndexOfLowered(t *testing.T) {
	texts := []string{
		"", "<", "<THINK>", "a <Think>b</THINK> c", "no tags here", "ÄÖ <thInk>é</think>",
		"<thinkING></thinking><reasoning>", "<<think>", "x</think", "</think>", strings.Repeat("<a ", 100) + "</Reasoning>",
		"İ<think>", "<think\u0130>", "<think></think>",
	}
	for _, s := range texts {
		for _, tag := range reasoningTags {
			for _, tg := range tag {
				if got, want := indexFold(s, tg), strings.Index(asciiLower(s), tg); got != want {
					t.Errorf("indexFold(%q, %q) = %d, want %d", s, tg, got, want)
				}
			}
		}
	}
}

// topKeys gives the keys json.Unmarshal into a map gives.
func TestTopKeysAreTheObjectsKeys(t *testing.T) {
	for _, raw := range []string{
		`{}`, `{"a":1}`, `{"a": {"b": [1, {"c": 2}]}, "d": "x,y:\"z\"", "e": [{"f": 1}]}`,
		`{"k\"ey": 1, "\u00e9t\u00e9": 2, "a\\b": 3}`, `{"dup": 1, "dup": 2}`, `{ "sp" : { } , "t":[] }`,
		`{"steps": [{"context_key": "a", "capability": "respond"}], "note": "{not a key}"}`,
	} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(maps.Keys(m))
		got := topKeys([]byte(raw))
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("topKeys(%s) = %q, want %q", raw, got, want)
		}
	}
}
