package postgres

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSNForTest returns the database the tests may use: CAPGRAPH_TEST_POSTGRES, set
// by scripts/setup/postgres.sh (sourced by scripts/test.sh). Without it the
// test skips, saying why — except in CI (CI=true), where it fails: CI must
// not silently drop the PostgreSQL run.
func DSNForTest(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv("CAPGRAPH_TEST_POSTGRES")
	if dsn != "" {
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

var schemaSeq atomic.Int64

// NewTestStore returns a store in a schema of its own, dropped when the test ends,
// so tests share one database without seeing each other's rows.
func NewTestStore(tb testing.TB) *Store {
	tb.Helper()
	dsn := DSNForTest(tb)
	schema := fmt.Sprintf("cptest_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, schemaSeq.Add(1))
	ctx := context.Background()
	s, err := New(ctx, Config{DSN: dsn, Schema: schema})
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() {
		s.Close()
		DropTestSchema(tb, dsn, schema)
	})
	return s
}

func DropTestSchema(tb testing.TB, dsn, schema string) {
	tb.Helper()
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
