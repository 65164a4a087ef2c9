package killtest

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Sayer prints the child's report lines to the parent. Safe for concurrent use.
type Sayer struct {
	mu     sync.Mutex
	w      io.Writer
	failed bool
}

// NewSayer writes to w (the child's stdout).
func NewSayer(w io.Writer) *Sayer { return &Sayer{w: w} }

// Say prints one line; a format starting with "ERR" marks the child failed.
// One write per line: lines reach the parent whole even if the child dies next.
func (s *Sayer) Say(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(format, "ERR") {
		s.failed = true
	}
	_, _ = io.WriteString(s.w, fmt.Sprintf(format, args...)+"\n")
}

// Failed reports whether an "ERR" line was said.
func (s *Sayer) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
