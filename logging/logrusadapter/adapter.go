package logrusadapter

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/capgraph/capgraph/logging"
)

// Format is the output format.
type Format string

const (
	FormatText Format = "text" // logfmt-like key=value lines; the default
	FormatJSON Format = "json" // one JSON object per line, for log collectors
)

// ErrInvalidConfig is the kind of every New error.
var ErrInvalidConfig = errors.New("logrusadapter: invalid config")

// Config configures New. The zero value logs info and above as text to stderr.
type Config struct {
	// Level: debug, info (default), warn or error.
	Level string
	// Format: text (default) or json.
	Format Format
	// Output defaults to os.Stderr, so logs never mix with an answer on stdout.
	Output io.Writer
	// DisableTimestamp leaves the time out (for reproducible test output).
	DisableTimestamp bool
}

// New returns a logging.Logger backed by a new logrus.Logger.
func New(cfg Config) (logging.Logger, error) {
	lvl, err := logging.ParseLevel(cfg.Level)
	if err != nil {
		return nil, fmt.Errorf("%w: level: %w", ErrInvalidConfig, err)
	}
	l := logrus.New()
	l.SetLevel(toLogrus(lvl))
	switch Format(strings.ToLower(string(cfg.Format))) {
	case FormatText, "":
		l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: cfg.DisableTimestamp, FullTimestamp: true, DisableColors: true})
	case FormatJSON:
		l.SetFormatter(&logrus.JSONFormatter{DisableTimestamp: cfg.DisableTimestamp})
	default:
		return nil, fmt.Errorf("%w: format %q (want text or json)", ErrInvalidConfig, cfg.Format)
	}
	if cfg.Output != nil {
		l.SetOutput(cfg.Output)
	} else {
		l.SetOutput(os.Stderr)
	}
	return Wrap(l), nil
}

// Wrap adapts an existing logrus logger (an application that already
// configures logrus passes its own).
func Wrap(l *logrus.Logger) logging.Logger { return adapter{e: logrus.NewEntry(l)} }

func toLogrus(l logging.Level) logrus.Level {
	switch l {
	case logging.LevelDebug:
		return logrus.DebugLevel
	case logging.LevelWarn:
		return logrus.WarnLevel
	case logging.LevelError:
		return logrus.ErrorLevel
	}
	return logrus.InfoLevel
}

type adapter struct{ e *logrus.Entry }

func (a adapter) Debug(msg string, kv ...any) { a.log(logrus.DebugLevel, msg, kv) }
func (a adapter) Info(msg string, kv ...any)  { a.log(logrus.InfoLevel, msg, kv) }
func (a adapter) Warn(msg string, kv ...any)  { a.log(logrus.WarnLevel, msg, kv) }
func (a adapter) Error(msg string, kv ...any) { a.log(logrus.ErrorLevel, msg, kv) }

func (a adapter) With(kv ...any) logging.Logger {
	return adapter{e: a.e.WithFields(logrus.Fields(logging.Fields(kv...)))}
}

func (a adapter) log(lvl logrus.Level, msg string, kv []any) {
	// Checking the level first avoids building the field map for dropped entries.
	if !a.e.Logger.IsLevelEnabled(lvl) {
		return
	}
	e := a.e
	if len(kv) > 0 {
		e = e.WithFields(logrus.Fields(logging.Fields(kv...)))
	}
	e.Log(lvl, msg)
}
