package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is the kind of every configuration error (errors.Is).
var ErrInvalid = errors.New("invalid configuration")

// Problem is one thing wrong with a configuration file.
type Problem struct {
	// Line is 1-based; 0 when the problem has no single line (an unreadable file).
	Line int
	// Key is the dotted key ("limits.max_node_steps", "server.api_keys[1].key").
	Key string
	// Problem says what is wrong and what is expected.
	Problem string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Problem)
	return b.String()
}

// Error lists every problem found in a file, in line order.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	name := e.File
	if name == "" {
		name = "config"
	}
	if len(e.Problems) == 1 {
		return name + ": " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", name, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }
