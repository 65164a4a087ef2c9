package sqlrow

import (
	"maps"
	"slices"
	"testing"
)

func TestJSONColumns(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]string
		err  bool
	}{
		{name: "NULL", in: "", want: nil},
		{name: "empty object", in: "{}", want: nil},
		{name: "metadata", in: `{"a":"b"}`, want: map[string]string{"a": "b"}},
		{name: "corrupt", in: `{"a":`, err: true},
	} {
		got, err := Metadata([]byte(tc.in))
		if (err != nil) != tc.err || !maps.Equal(got, tc.want) || (tc.want == nil && got != nil) {
			t.Errorf("%s: Metadata = %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "", want: nil},
		{in: "[]", want: nil},
		{in: `["n1","n2"]`, want: []string{"n1", "n2"}},
		{in: `[1]`, err: true},
	} {
		got, err := Strings([]byte(tc.in), "next")
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) || (tc.want == nil && got != nil) {
			t.Errorf("Strings(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	if v, err := MapArg(nil); v != nil || err != nil {
		t.Errorf("MapArg(nil) = %v, %v; want NULL", v, err)
	}
	if v, err := JSONArg([]string{"x"}); v != `["x"]` || err != nil {
		t.Errorf(`JSONArg([x]) = %v, %v; want ["x"]`, v, err)
	}
}
