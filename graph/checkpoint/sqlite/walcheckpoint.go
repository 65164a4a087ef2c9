package sqlite

import (
	"context"
	"database/sql"
	"time"
)

// checkpointEvery is how often the checkpointer looks for new commits.
const checkpointEvery = 100 * time.Millisecond

// checkpointer copies the write-ahead log into the database file, off the
// commit path: SQLite would otherwise run this inside the commit that grows
// the log past 1 000 pages, and every write queued behind that commit would
// wait for it. A passive checkpoint runs beside the writer and the readers,
// so it never blocks them; the log restarts from its beginning once it has
// been copied whole and no reader uses it.
type checkpointer struct {
	db   *sql.DB
	stop context.CancelFunc
	done chan struct{}
}

func (s *Store) startCheckpointer(db *sql.DB) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &checkpointer{db: db, stop: cancel, done: make(chan struct{})}
	s.ck = c
	go func() {
		defer close(c.done)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		var seen int64
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n := s.commits.Load(); n != seen {
				seen = n
				// An error (the file busy with a migration) is retried
				// after the next commit: until then the log does not grow.
				var busy, frames, copied int
				err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
				if err == nil && afterCheckpoint != nil {
					afterCheckpoint(frames, copied)
				}
			}
		}
	}()
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	if c == nil {
		return nil
	}
	c.stop()
	<-c.done
	return c.db.Close()
}

// afterCheckpoint, set by tests only, sees each checkpoint's frames in
// the log and frames copied into the file.
var afterCheckpoint func(frames, copied int)
