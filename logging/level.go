package logging

import (
	"errors"
	"fmt"
	"strings"
)

// Level is a log severity, ordered from most to least verbose.
type Level int

const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

// ErrInvalidLevel is the kind of a ParseLevel failure.
var ErrInvalidLevel = errors.New("invalid log level")

var levelNames = [...]string{LevelDebug: "debug", LevelInfo: "info", LevelWarn: "warn", LevelError: "error"}

// String returns the lower-case name.
func (l Level) String() string {
	if l >= 0 && int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", int(l))
}

// ParseLevel parses debug, info, warn (or warning) and error, case-insensitively.
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return LevelDebug, nil
	case "info", "":
		return LevelInfo, nil
	case "warn", "warning":
		return LevelWarn, nil
	case "error":
		return LevelError, nil
	}
	return LevelInfo, fmt.Errorf("%w %q (want debug, info, warn or error)", ErrInvalidLevel, s)
}
