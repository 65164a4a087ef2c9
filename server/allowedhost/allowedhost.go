package allowedhost

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Any is the entry that accepts every Host: for a server behind API keys
// that is reached by names nobody can list (a rebinding page has no key).
const Any = "*"

// Pattern is one parsed entry: a host name or IP address, with a port or
// for any port.
type Pattern struct {
	host string // lower case; an IPv6 address without brackets
	port string // "" for any port
	any  bool
}

// Rule says in words what an entry may be; every refusal quotes it.
const Rule = "a host name or IP address with an optional port (capgraph.example.org, capgraph.example.org:8443, 10.0.0.5, [fd00::5]:8080), or \"*\" for any"

// Parse checks one entry of allowed_hosts and returns its pattern.
func Parse(entry string) (Pattern, error) {
	if entry == Any {
		return Pattern{any: true}, nil
	}
	host, port, ok := Split(entry)
	if !ok || (port == "" && strings.HasSuffix(entry, ":")) {
		return Pattern{}, fmt.Errorf("%q is not a host: want %s", entry, Rule)
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return Pattern{}, fmt.Errorf("%q has no valid port (1 to 65535): want %s", entry, Rule)
		}
	}
	return Pattern{host: host, port: port}, nil
}

// Any reports whether the pattern accepts every host.
func (p Pattern) Any() bool { return p.any }

// String is the entry in its normal form.
func (p Pattern) String() string {
	switch {
	case p.any:
		return Any
	case p.port == "":
		if strings.Contains(p.host, ":") {
			return "[" + p.host + "]"
		}
		return p.host
	}
	return net.JoinHostPort(p.host, p.port)
}

// Match reports whether a request's host and port (from Split) match.
func (p Pattern) Match(host, port string) bool {
	return p.any || p.host == host && (p.port == "" || p.port == port)
}

// Split splits a Host header (or an entry) into its host, in lower case
// and IPv6 without brackets, and its port ("" when none). ok is false for
// anything that is not a host name or an IP address with an optional port:
// a scheme, a path, user info, spaces, an empty name.
func Split(h string) (host, port string, ok bool) {
	host = h
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", "", false
		}
		host, port = h[1:end], strings.TrimPrefix(h[end+1:], ":")
		if rest := h[end+1:]; rest != "" && !strings.HasPrefix(rest, ":") {
			return "", "", false
		}
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", false
		}
		return strings.ToLower(host), port, validPort(port)
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if strings.Count(h, ":") > 1 {
			return "", "", false // an IPv6 address needs brackets
		}
		host, port = h[:i], h[i+1:]
		if port == "" {
			return "", "", false
		}
	}
	host = strings.ToLower(host)
	if !validName(host) {
		return "", "", false
	}
	return host, port, validPort(port)
}

func validPort(p string) bool {
	if len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}

// validName accepts DNS names (letters, digits, '-', '_' in labels of 1
// to 63 characters, at most 253 in all) and IPv4 addresses.
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Loopback reports whether host (from Split) names this machine only:
// localhost, an address of 127.0.0.0/8 or ::1. A page cannot be served
// from these names by anyone else, so they are always allowed.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// List is a parsed allowed_hosts.
type List []Pattern

// ParseList parses every entry; the error names the first bad one's index.
func ParseList(entries []string) (List, error) {
	l := make(List, 0, len(entries))
	for i, e := range entries {
		p, err := Parse(e)
		if err != nil {
			return nil, &EntryError{Index: i, Err: err}
		}
		l = append(l, p)
	}
	return l, nil
}

// EntryError is a bad entry of a list.
type EntryError struct {
	Index int
	Err   error
}

func (e *EntryError) Error() string { return e.Err.Error() }
func (e *EntryError) Unwrap() error { return e.Err }

// Any reports whether the list accepts every host.
func (l List) Any() bool {
	for _, p := range l {
		if p.any {
			return true
		}
	}
	return false
}

// Allows reports whether a request's Host header names this server: a
// loopback name, or a match of an entry.
func (l List) Allows(hostHeader string) bool {
	host, port, ok := Split(hostHeader)
	if !ok {
		return l.Any()
	}
	if Loopback(host) {
		return true
	}
	for _, p := range l {
		if p.Match(host, port) {
			return true
		}
	}
	return false
}
