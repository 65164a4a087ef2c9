package jsonquote_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/capgraph/capgraph/internal/jsonquote"
)

// FuzzAppend: any string is quoted byte for byte as json.Marshal quotes it,
// after whatever the buffer held.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnew\nline\r\b\f\x00\x1f\x7f",
		"Strahlstrom 500 mA — ok", "€ 😀", "\u2028\u2029", "\xff invalid \xe2\x80", "\xed\xa0\x80 surrogate"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := jsonquote.Append([]byte("x:"), s)
		if !bytes.Equal(got, append([]byte("x:"), want...)) {
			t.Fatalf("Append(%q) = %s, json.Marshal = %s", s, got[2:], want)
		}
	})
}
