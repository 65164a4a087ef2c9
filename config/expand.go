package config

import (
	"fmt"
	"strings"
)

// expand replaces ${NAME} and ${NAME:-default} in a scalar value with the
// environment's values; $${ is a literal ${. ${NAME:-default} uses the
// default when NAME is unset or empty. ${NAME} with NAME unset is an error,
// because a silently empty API key or address fails much later and far from
// the cause. A $ not followed by { is kept as is.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			b.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q", s)
		}
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("invalid environment variable name %q in ${%s} (want letters, digits and _)", name, expr)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
		}
		b.WriteString(v)
		i += end + 1
	}
	return b.String(), nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
