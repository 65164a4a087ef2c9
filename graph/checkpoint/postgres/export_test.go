package postgres

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint/postgres/internal/pgschema"
)

// NewTestStore returns a store in a schema of its own, dropped when the test ends,
// so tests share one database without seeing each other's rows. (Tests outside
// this package use pgtest; this package's own tests cannot import it.)
func NewTestStore(tb testing.TB) *Store {
	tb.Helper()
	dsn, schema := pgschema.New(tb, "cptest")
	s, err := New(context.Background(), Config{DSN: dsn, Schema: schema})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
