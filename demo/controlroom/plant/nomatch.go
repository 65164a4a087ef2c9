package plant

import (
	"fmt"
	"strings"
)

// NoMatch is Find's honest "nothing matches": what in the request does not
// exist, and what does. It is an error (errors.Is ErrNoMatch) for callers
// of Find, and channel_finding returns it as a successful result
// (ChannelAddresses.NotFound), since no other plan can find what the
// machine does not have.
type NoMatch struct {
	Query string `json:"query"`
	// Absent are numbered devices the machine does not have, with the ones
	// it has ("sector 42"; "sectors 1 to 12").
	Absent []Absence `json:"absent,omitempty"`
	// Unknown are words of the request no channel has ("humidity").
	Unknown []string `json:"unknown,omitempty"`
	// Missing are parts of the request no channel has together with With:
	// Missing ["temperature"], With ["klystron"].
	Missing []string `json:"missing,omitempty"`
	With    []string `json:"with,omitempty"`
	// Nearby are the channels that match parts of the request.
	Nearby []ChannelGroup `json:"nearby,omitempty"`
	// Known names some of the machine's quantities, when the request names
	// none of them.
	Known []string `json:"known,omitempty"`
	// Empty: the request names no quantity, device or channel at all.
	Empty bool `json:"empty,omitempty"`
	// Unsupported is a request for an action the application does not
	// offer ("turn off the RF"), in the user's words.
	Unsupported string `json:"unsupported,omitempty"`
}

// Absence is a numbered device that does not exist.
type Absence struct {
	What   string `json:"what"`             // "sector 42"
	Exists string `json:"exists,omitempty"` // "sectors 1 to 12"
}

// ChannelGroup is the channels matching part of a request.
type ChannelGroup struct {
	// For is that part, in the request's words ("klystron").
	For string `json:"for"`
	// Channels are the first of them (at most eight); Total counts all.
	Channels []string `json:"channels"`
	Total    int      `json:"total"`
}

func (m *NoMatch) Error() string {
	return fmt.Sprintf("%v for %q: %s", ErrNoMatch, m.Query, m.Explain())
}
func (m *NoMatch) Unwrap() error { return ErrNoMatch }

// Explain says in sentences what does not exist and what does.
func (m *NoMatch) Explain() string {
	if m.Unsupported != "" {
		return notOffered(m.Unsupported)
	}
	var parts []string
	for _, a := range m.Absent {
		s := "There is no " + a.What
		if a.Exists != "" {
			s += "; the machine has " + a.Exists
		}
		parts = append(parts, s+".")
	}
	if len(m.Missing) > 0 {
		if len(m.With) > 0 {
			parts = append(parts, fmt.Sprintf("No channel has %s together with %s.", quoteAll(m.Missing, "or"), quoteAll(m.With, "and")))
		} else {
			parts = append(parts, fmt.Sprintf("No channel has %s.", quoteAll(m.Missing, "and")))
		}
	}
	if len(m.Unknown) > 0 {
		parts = append(parts, fmt.Sprintf("No channel matches %s.", quoteAll(m.Unknown, "or")))
	}
	if m.Empty {
		parts = append(parts, "The request names no quantity, device or channel.")
	}
	for _, g := range m.Nearby {
		if g.Total == 0 {
			parts = append(parts, fmt.Sprintf("No channel has %q either.", g.For))
			continue
		}
		s := fmt.Sprintf("Channels for %q", g.For)
		if g.Total > len(g.Channels) {
			s += fmt.Sprintf(" (%d)", g.Total)
		}
		s += ": " + strings.Join(g.Channels, ", ")
		if more := g.Total - len(g.Channels); more > 0 {
			s += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, s+".")
	}
	if len(m.Known) > 0 {
		parts = append(parts, "Ask for one of the machine's quantities, such as "+strings.Join(m.Known, ", ")+".")
	}
	return strings.Join(parts, " ")
}

// quoteAll quotes words and joins them: `"a", "b" or "c"`.
func quoteAll(words []string, conj string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
}
