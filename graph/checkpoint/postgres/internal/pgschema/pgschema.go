package pgschema

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DSN returns CAPGRAPH_TEST_POSTGRES, set by scripts/setup/postgres.sh
// (sourced by scripts/test.sh). Without it the test skips, saying why — except
// under CI=true, where it fails: CI must not silently drop the PostgreSQL run.
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

// New returns the DSN and the name of a schema of the test's own (prefix_pid_
// time_seq), which is dropped when the test ends; cleanups registered after
// New (closing stores on it) run before the drop.
func New(tb testing.TB, prefix string) (dsn, schema string) {
	tb.Helper()
	dsn = DSN(tb)
	schema = fmt.Sprintf("%s_%d_%d_%d", prefix, os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	tb.Cleanup(func() { Drop(tb, dsn, schema) })
	return dsn, schema
}

// Drop drops schema with everything in it.
func Drop(tb testing.TB, dsn, schema string) {
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
