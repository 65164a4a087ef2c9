package approvaltoken

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzAnswerText: whatever a user types around an approval token, reading
// the answer never panics, removes every copy of the token (any letter
// case) and keeps valid UTF-8 valid. The seed corpus is in
// testdata/fuzz/FuzzAnswerText (among it the "ɐ yes AP-…").
func FuzzAnswerText(f *testing.F) {
	const tok = "AP-7F3KQ2ZD"
	for _, s := range []string{"yes " + tok, "ɐ yes " + tok, "yes " + strings.ToLower(tok), tok + " no", "İ" + tok + "ſ",
		"yes AP-7F3KQ2Z", "", "\xff" + tok, "ɐɐɐ" + tok + tok, "K" + "\u212a" + tok} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := AnswerText(in, tok)
		if asciiIndexFold(out, tok) >= 0 {
			t.Fatalf("AnswerText(%q) = %q still holds the token", in, out)
		}
		if utf8.ValidString(in) && !utf8.ValidString(out) {
			t.Fatalf("AnswerText(%q) = %q is not valid UTF-8", in, out)
		}
		if len(out) > len(in) {
			t.Fatalf("AnswerText(%q) = %q grew", in, out)
		}
	})
}

// asciiIndexFold is a reference implementation for the fuzz check.
func asciiIndexFold(s, t string) int {
	for i := 0; i+len(t) <= len(s); i++ {
		if asciiEqualFold(s[i:i+len(t)], t) {
			return i
		}
	}
	return -1
}

func TestAnswerTextCases(t *testing.T) {
	const tok = "AP-7F3KQ2ZD"
	for in, want := range map[string]string{
		"yes " + tok:                   "yes",
		"ɐ yes " + tok:                 "ɐ yes",
		"Yes, " + strings.ToLower(tok): "Yes",
		tok + " — no.":                 "no",
		"yes" + tok + "yes":            "yes yes",
		"\u212a" + tok[1:] + " yes":    "\u212a" + tok[1:] + " yes", // the Kelvin sign is no K
		"ok " + tok + " " + tok + " 👍": "ok 👍",
	} {
		if got := AnswerText(in, tok); got != want {
			t.Errorf("AnswerText(%q) = %q, want %q", in, got, want)
		}
	}
}
