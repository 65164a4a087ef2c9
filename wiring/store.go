package wiring

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"

	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

// ErrStore is the kind of a --store value or store that cannot be used.
var ErrStore = errors.New("store")

// StoreKind says which checkpoint store a --store value names.
type StoreKind string

// Store kinds.
const (
	StoreMemory   StoreKind = "memory"
	StoreSQLite   StoreKind = "sqlite"
	StorePostgres StoreKind = "postgres"
)

// StoreSpec is a parsed --store value.
type StoreSpec struct {
	Kind StoreKind
	// Path is the SQLite file; DSN the PostgreSQL URL.
	Path string
	DSN  string
}

// String renders the spec for messages; a PostgreSQL password is hidden.
func (s StoreSpec) String() string {
	switch s.Kind {
	case StoreSQLite:
		return "sqlite:" + s.Path
	case StorePostgres:
		return "postgres (" + redactDSN(s.DSN) + ")"
	}
	return string(s.Kind)
}

// ParseStore parses "memory", "sqlite:PATH" or a "postgres://…" /
// "postgresql://…" URL. An empty value means the default: SQLite in the
// application's data directory (DefaultStorePath).
func ParseStore(v, app string, getenv func(string) string) (StoreSpec, error) {
	switch {
	case v == "":
		p, err := DefaultStorePath(app, getenv)
		if err != nil {
			return StoreSpec{}, err
		}
		return StoreSpec{Kind: StoreSQLite, Path: p}, nil
	case v == config.StoreMemory:
		return StoreSpec{Kind: StoreMemory}, nil
	case strings.HasPrefix(v, "sqlite:"):
		p := strings.TrimPrefix(v, "sqlite:")
		if p == "" {
			return StoreSpec{}, fmt.Errorf("%w: %q names no file (want sqlite:PATH)", ErrStore, v)
		}
		return StoreSpec{Kind: StoreSQLite, Path: p}, nil
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		return StoreSpec{Kind: StorePostgres, DSN: v}, nil
	}
	return StoreSpec{}, fmt.Errorf("%w: %q is not memory, sqlite:PATH or postgres://…", ErrStore, v)
}

// DefaultStorePath is where application app keeps its default SQLite store:
// a directory of its own in the user's data directory,
// $XDG_DATA_HOME/APP/APP.db, else ~/.local/share/APP/APP.db (on macOS
// ~/Library/Application Support/APP, on Windows %LocalAppData%\APP). Each
// application has its own, so no application sees (or finishes) another's
// threads; for the capgraph command it is ~/.local/share/capgraph/capgraph.db.
func DefaultStorePath(app string, getenv func(string) string) (string, error) {
	if err := CheckAppName(app); err != nil {
		return "", err
	}
	file := app + ".db"
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, app, file), nil
	}
	switch runtime.GOOS {
	case "windows":
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, app, file), nil
		}
	case "darwin":
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, "Library", "Application Support", app, file), nil
		}
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", app, file), nil
	}
	return "", fmt.Errorf("%w: no home directory (HOME) to keep the default SQLite store in; use --store memory or --store sqlite:PATH", ErrStore)
}

var appName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ErrAppName is the kind of an application name that cannot be used.
var ErrAppName = errors.New("invalid application name")

// CheckAppName reports whether name can name an application: it names
// the application's data directory and is recorded with its threads, so it
// is a plain file name (letters, digits, '.', '_', '-'; not starting with
// '.' or '-').
func CheckAppName(name string) error {
	if !appName.MatchString(name) {
		return fmt.Errorf("%w %q: use letters, digits, '.', '_' and '-', starting with a letter or digit", ErrAppName, name)
	}
	return nil
}

// OpenStore opens the store a spec names, creating the SQLite file's
// directory if needed. close releases it.
func OpenStore(ctx context.Context, s StoreSpec) (st checkpoint.Store, closeFn func() error, err error) {
	switch s.Kind {
	case StoreMemory:
		return memory.New(), func() error { return nil }, nil
	case StoreSQLite:
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrStore, err)
		}
		db, err := sqlite.New(sqlite.Config{Path: s.Path})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: open %s: %w", ErrStore, s.Path, err)
		}
		return db, db.Close, nil
	case StorePostgres:
		db, err := postgres.New(ctx, postgres.Config{DSN: s.DSN})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: open %s: %w", ErrStore, s, err)
		}
		return db, db.Close, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown kind %q", ErrStore, s.Kind)
}

// redactDSN hides a password in a PostgreSQL URL.
func redactDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	scheme := strings.Index(dsn, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return dsn
	}
	creds := dsn[scheme+3 : at]
	if i := strings.Index(creds, ":"); i >= 0 {
		creds = creds[:i] + ":***"
	}
	return dsn[:scheme+3] + creds + dsn[at:]
}
