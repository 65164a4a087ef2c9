package mcp

import (
	"regexp"
	"testing"
)

var capabilityName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func TestNames(t *testing.T) {
	for _, tc := range []struct{ prefix, tool, want string }{
		{"everything", "get-sum", "everything_get_sum"},
		{"wiki", "searchPages", "wiki_searchpages"},
		{"wiki", "Search.Pages v2", "wiki_search_pages_v2"},
		{"fs", "--read__file--", "fs_read_file"},
		{"fs", "läsa_fil", "fs_l_sa_fil"},
		{"fs", "日本語", "fs_tool"},
		{"fs", "2fa-check", "fs_2fa_check"},
	} {
		got := CapabilityName(tc.prefix, tc.tool)
		if got != tc.want || !capabilityName.MatchString(got) {
			t.Errorf("CapabilityName(%q, %q) = %q, want %q", tc.prefix, tc.tool, got, tc.want)
		}
	}
	for _, tc := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{Name: "everything"}, "everything"},
		{ServerConfig{Name: "My-Wiki.prod"}, "my_wiki_prod"},
		{ServerConfig{Name: "3d-printer"}, "mcp_3d_printer"},
		{ServerConfig{Name: "日本"}, "mcp"},
		{ServerConfig{Name: "x", Prefix: "tools"}, "tools"},
	} {
		if got := Prefix(tc.cfg); got != tc.want {
			t.Errorf("Prefix(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
	// Tools whose names read the same, and a name the application has.
	n := names{taken: func(s string) bool { return s == "fs_read" }}
	used := map[string]bool{}
	var got []string
	for _, tool := range []string{"read", "get-sum", "get_sum", "GET SUM"} {
		name := n.unique(CapabilityName("fs", tool), used)
		used[name] = true
		got = append(got, name)
	}
	want := []string{"fs_read_2", "fs_get_sum", "fs_get_sum_2", "fs_get_sum_3"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("unique names %v, want %v", got, want)
		}
	}
}
