package sqlite

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalidConfig is the kind of every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("sqlite: invalid config")

// Config configures a Store.
type Config struct {
	// Path is the database file. It is created if missing; its directory must
	// exist. Required. ":memory:" is refused: the reader pool would not see the
	// writer's data (use the memory store instead).
	Path string
	// ReadConns caps the read pool. Default 4.
	ReadConns int
	// BusyTimeout is how long a statement waits for a lock held by another
	// process before failing with SQLITE_BUSY. Default 5s.
	BusyTimeout time.Duration
	// MaxBatch caps the writes (Put, PutWrites) one group commit holds; 1
	// commits every write on its own. Default 128. See the package doc.
	MaxBatch int
}

const (
	defaultReadConns   = 4
	defaultBusyTimeout = 5 * time.Second
	defaultMaxBatch    = 128
)

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Path == "":
		return c, fmt.Errorf("%w: Path is empty", ErrInvalidConfig)
	case c.Path == ":memory:" || strings.HasPrefix(c.Path, "file:"):
		return c, fmt.Errorf("%w: Path %q: give a file path (use the memory store for an in-process store)", ErrInvalidConfig, c.Path)
	case strings.ContainsAny(c.Path, "?#"):
		// The driver splits the DSN at '?', so such a path cannot be expressed.
		return c, fmt.Errorf("%w: Path %q contains '?' or '#'", ErrInvalidConfig, c.Path)
	case c.ReadConns < 0:
		return c, fmt.Errorf("%w: ReadConns %d is negative", ErrInvalidConfig, c.ReadConns)
	case c.BusyTimeout < 0:
		return c, fmt.Errorf("%w: BusyTimeout %s is negative", ErrInvalidConfig, c.BusyTimeout)
	case c.MaxBatch < 0:
		return c, fmt.Errorf("%w: MaxBatch %d is negative", ErrInvalidConfig, c.MaxBatch)
	}
	if c.ReadConns == 0 {
		c.ReadConns = defaultReadConns
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = defaultBusyTimeout
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = defaultMaxBatch
	}
	return c, nil
}

// writerDSN: WAL + FULL makes a commit durable when it returns; _txlock=immediate
// takes the write lock at BEGIN so a transaction never has to upgrade. The
// writer does not checkpoint the log itself (wal_autocheckpoint 0): a commit
// that did would hold every write queued behind it; the store's checkpointer
// does it on a connection of its own.
func (c Config) writerDSN() string {
	return fmt.Sprintf("%s?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)&_pragma=wal_autocheckpoint(0)&_txlock=immediate",
		c.Path, c.BusyTimeout.Milliseconds())
}

// checkpointerDSN is the checkpointer's connection (see checkpointer).
func (c Config) checkpointerDSN() string {
	return fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=synchronous(FULL)&_pragma=wal_autocheckpoint(0)", c.Path, c.BusyTimeout.Milliseconds())
}

// readerDSN: query_only guards against a write slipping onto a read connection.
func (c Config) readerDSN() string {
	return fmt.Sprintf("%s?_pragma=busy_timeout(%d)&_pragma=query_only(1)", c.Path, c.BusyTimeout.Milliseconds())
}
