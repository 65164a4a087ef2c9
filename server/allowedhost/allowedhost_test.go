package allowedhost

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		entry, want, problem string // want: the normal form; problem: a part of the error
	}{
		{"capgraph.example.org", "capgraph.example.org", ""},
		{"CapGraph.Example.org:8443", "capgraph.example.org:8443", ""},
		{"10.0.0.5", "10.0.0.5", ""},
		{"[fd00::5]", "[fd00::5]", ""},
		{"[FD00::5]:8080", "[fd00::5]:8080", ""},
		{"under_score.lab", "under_score.lab", ""},
		{"*", "*", ""},
		{"", "", "not a host"},
		{"https://capgraph.example.org", "", "not a host"},
		{"capgraph.example.org/chat", "", "not a host"},
		{"capgraph.example.org:", "", "not a host"},
		{"capgraph.example.org:0", "", "no valid port"},
		{"capgraph.example.org:080", "", "no valid port"},
		{"capgraph.example.org:65536", "", "no valid port"},
		{"capgraph.example.org:http", "", "not a host"},
		{"fd00::5", "", "not a host"},
		{"[fe80::1%eth0]", "", "not a host"},
		{"[10.0.0.5]", "", "not a host"},
		{"*.example.org", "", "not a host"},
		{"user@capgraph.example.org", "", "not a host"},
		{"capgraph example.org", "", "not a host"},
		{"capgraph.example.org.", "", "not a host"},
		{"-capgraph.example.org", "", "not a host"},
		{"capgraph..example.org", "", "not a host"},
		{"bücher.example", "", "not a host"},
		{strings.Repeat("a", 64) + ".org", "", "not a host"},
	} {
		p, err := Parse(tc.entry)
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.entry, err)
		case tc.problem == "" && p.String() != tc.want:
			t.Errorf("Parse(%q) = %s, want %s", tc.entry, p, tc.want)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), Rule)):
			t.Errorf("Parse(%q) = %v, want an error saying %q and the rule", tc.entry, err, tc.problem)
		}
	}
}

func TestAllows(t *testing.T) {
	l, err := ParseList([]string{"capgraph.example.org", "proxy.lab:8443", "[fd00::5]:8080", "10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "localhost:8080", "LocalHost:1", "127.0.0.1", "127.0.0.1:8080", "127.1.2.3:9", "[::1]", "[::1]:8080", "[::ffff:127.0.0.1]:8080",
		"capgraph.example.org", "capgraph.example.org:80", "CAPGRAPH.EXAMPLE.ORG:443", "proxy.lab:8443", "[fd00::5]:8080", "10.0.0.5:8080"} {
		if !l.Allows(h) {
			t.Errorf("%q refused", h)
		}
	}
	for _, h := range []string{"", "evil.example", "rebind.evil.example:8080", "localhost.evil.example", "capgraph.example.org.evil.example",
		"x.capgraph.example.org", "proxy.lab", "proxy.lab:8080", "[fd00::5]", "[fd00::5]:8081", "10.0.0.6", "0.0.0.0:8080", "[::]:8080",
		"localhost.", "2130706433", "127.0.0.1.nip.io", "capgraph.example.org:8080:1", "::1", "[::1"} {
		if l.Allows(h) {
			t.Errorf("%q allowed", h)
		}
	}
	if any, _ := ParseList([]string{"*"}); !any.Allows("evil.example") || !any.Allows("not a host") {
		t.Error(`"*" refused a host`)
	}
	if _, err := ParseList([]string{"ok.example", "not ok"}); err == nil || err.(*EntryError).Index != 1 {
		t.Errorf("the bad entry's index: %v", err)
	}
}
