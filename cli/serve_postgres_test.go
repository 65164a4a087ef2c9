package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
)

// pgSchemaDSN returns a DSN whose connections use a fresh schema (dropped
// when the test ends), so `capgraph --store` on it sees no other test's
// threads.
func pgSchemaDSN(t *testing.T) string {
	t.Helper()
	dsn := pgtest.DSN(t)
	schema := fmt.Sprintf("clitest_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// On PostgreSQL, `serve` leaves a cut run alone while a replica that died
// still holds its lease, and takes it over by itself once the lease has
// expired (it looks again every server.lease_ttl).
func TestServeTakesOverOnPostgres(t *testing.T) {
	dsn := pgSchemaDSN(t)
	app, started, finds, reads := cutApp()
	h := newHarness(t, app)
	h.writeConfig(cli.DefaultConfigFile, fmt.Sprintf("store: %q\nserver:\n  lease_ttl: 1s\n", dsn))
	cutRun(t, h, started)

	// A replica that died while running the thread: its lease, never renewed.
	ctx := context.Background()
	store, err := postgres.New(ctx, postgres.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	infos, err := store.Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil || len(infos) != 1 {
		t.Fatalf("threads %v, %v; want the cut one", infos, err)
	}
	if _, err := store.AcquireLease(ctx, infos[0].ThreadID, "dead-replica", time.Second); err != nil {
		t.Fatal(err)
	}

	sv := startServe(h, app, "--addr", "127.0.0.1:0")
	sv.waitFor(t, &sv.errb, "took over cut runs", "no take-over")
	if code := sv.stop(); code != cli.ExitOK {
		t.Fatalf("serve exit %d: %s", code, sv.errb.String())
	}
	if strings.Contains(sv.errb.String(), "resumed runs stopped by a crash or shutdown") {
		t.Errorf("the start-up recovery resumed a run the dead replica still held: %s", sv.errb.String())
	}
	r := h.run("", "graph", "--thread", "cut")
	mustContain(t, "plan after take-over", r.stdout, "1. find_sensor — done", "2. read_sensor after 1 — done")
	if finds.Load() != 1 || reads.Load() != 2 {
		t.Errorf("find ran %d times, read %d; want 1 and 2", finds.Load(), reads.Load())
	}
}
