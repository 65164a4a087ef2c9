// Package pgtest gives tests outside graph/checkpoint/postgres a PostgreSQL
// store of their own: a fresh schema in the database named by
// CAPGRAPH_TEST_POSTGRES (scripts/setup/postgres.sh provides one), dropped
// when the test ends. Without that variable a test skips, saying why, except
// under CI=true, where it fails: CI must not silently drop PostgreSQL tests.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
)

// DSN returns CAPGRAPH_TEST_POSTGRES, or skips (fails under CI=true).
func DSN(tb testing.TB) string {
	tb.Helper()
	if dsn := os.Getenv("CAPGRAPH_TEST_POSTGRES"); dsn != "" {
		return dsn
	}
	msg := "CAPGRAPH_TEST_POSTGRES is not set; run scripts/test.sh or `source scripts/setup/postgres.sh` first"
	if why := os.Getenv("CAPGRAPH_TEST_POSTGRES_UNAVAILABLE"); why != "" {
		msg = "no PostgreSQL for the tests: " + why
	}
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + " (CI=true: PostgreSQL tests must run, not skip)")
	}
	tb.Skip(msg)
	return ""
}

var seq atomic.Int64

// Replicas opens n Stores on one fresh schema, as n replicas of a
// deployment would; the schema is dropped and the stores closed when the
// test ends.
func Replicas(tb testing.TB, n int) []*postgres.Store {
	tb.Helper()
	dsn := DSN(tb)
	schema := fmt.Sprintf("pgtest_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	tb.Cleanup(func() { drop(tb, dsn, schema) })
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

func drop(tb testing.TB, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		tb.Errorf("drop schema %s: %v", schema, err)
	}
}
