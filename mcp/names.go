package mcp

import (
	"strconv"
	"strings"
)

// snake turns any name into lower_snake_case: letters and digits kept
// (lower-cased, accents and other scripts dropped), every run of anything
// else one underscore, none at either end ("get-Sum.v2" → "get_sum_v2").
func snake(s string) string {
	var b strings.Builder
	pending := false
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
			fallthrough
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if pending && b.Len() > 0 {
				b.WriteByte('_')
			}
			pending = false
			b.WriteRune(r)
		default:
			pending = true
		}
	}
	return b.String()
}

// Prefix returns the capability-name prefix of a server: its configured
// prefix, else its name in lower_snake_case; "mcp" when nothing usable is
// left, and with "mcp_" in front when it would start with a digit.
func Prefix(c ServerConfig) string {
	p := c.Prefix
	if p == "" {
		p = snake(c.Name)
	}
	switch {
	case p == "":
		return "mcp"
	case p[0] >= '0' && p[0] <= '9':
		return "mcp_" + p
	}
	return p
}

// CapabilityName is the capability name of a tool: prefix_tool, the tool's
// name made lower_snake_case ("everything", "get-sum" → "everything_get_sum").
func CapabilityName(prefix, tool string) string {
	t := snake(tool)
	if t == "" {
		t = "tool"
	}
	return prefix + "_" + t
}

// names hands out unique capability names: a name already taken (by the
// application, another server, or another tool whose name reads the same)
// gets _2, _3, … appended.
type names struct{ taken func(string) bool }

func (n names) unique(name string, mine map[string]bool) string {
	if !n.taken(name) && !mine[name] {
		return name
	}
	for i := 2; ; i++ {
		c := name + "_" + strconv.Itoa(i)
		if !n.taken(c) && !mine[c] {
			return c
		}
	}
}
