package apikey

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want string // "" = accepted
	}{
		{"sk-alice-0123456789", ""},
		{strings.Repeat("x", MinLength), ""},
		{"a=b:c/d+e_f-g.h~!@#", ""},
		{"", "is 0 characters; use at least 16"},
		{"x", "is 1 characters; use at least 16"},
		{strings.Repeat("x", MinLength-1), "use at least 16"},
		{"sk-0123456789abcd,ef", "comma at character 18"},
		{"sk-0123456789 abcdef", "space, a control or a non-ASCII character at byte 14"},
		{"sk-0123456789\tabcdef", "byte 14"},
		{"sk-0123456789\x00abcdef", "byte 14"},
		{"sk-0123456789ébcdef", "byte 14"},
	} {
		err := Check(tc.key)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q) = %v, want nil", tc.key, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v, want %q", tc.key, err, tc.want)
		case err != nil && len(tc.key) > 3 && strings.Contains(err.Error(), tc.key):
			t.Errorf("Check(%q) repeats the key: %v", tc.key, err)
		}
	}
}

func TestHash(t *testing.T) {
	// sha256("abc")
	if got := Hash("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal(got)
	}
}
