// Package pgtest gives tests outside graph/checkpoint/postgres a PostgreSQL
// store of their own: a fresh schema in the database named by
// CAPGRAPH_TEST_POSTGRES (scripts/setup/postgres.sh provides one), dropped
// when the test ends. Without that variable a test skips, saying why, except
// under CI=true, where it fails: CI must not silently drop PostgreSQL tests.
package pgtest

import (
	"context"
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/internal/pgschema"
)

// DSN returns CAPGRAPH_TEST_POSTGRES, or skips (fails under CI=true).
func DSN(tb testing.TB) string {
	tb.Helper()
	return pgschema.DSN(tb)
}

// Replicas opens n Stores on one fresh schema, as n replicas of a
// deployment would; the schema is dropped and the stores closed when the
// test ends.
func Replicas(tb testing.TB, n int) []*postgres.Store {
	tb.Helper()
	dsn, schema := pgschema.New(tb, "pgtest")
	var out []*postgres.Store
	for range n {
		s, err := postgres.New(context.Background(), postgres.Config{DSN: dsn, Schema: schema, MaxConns: 4})
		if err != nil {
			tb.Fatalf("postgres.New: %v", err)
		}
		tb.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}
