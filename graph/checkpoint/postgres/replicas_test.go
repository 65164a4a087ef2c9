package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/internal/pgschema"
)

func TestNewRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  postgres.Config
		want string
	}{
		{"empty DSN", postgres.Config{}, "DSN is empty"},
		{"negative MaxConns", postgres.Config{DSN: "postgres://localhost/x", MaxConns: -1}, "MaxConns -1"},
		{"unparseable DSN", postgres.Config{DSN: "postgres://u:secret@host:notaport/db"}, "DSN"},
	} {
		_, err := postgres.New(ctx, tc.cfg)
		if !errors.Is(err, postgres.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig naming %s", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error leaks the password: %v", tc.name, err)
		}
	}
}

// Replicas: several Stores created at once on one schema migrate once, and
// their concurrent Puts on one thread leave the summary on the greatest id.
func TestReplicasShareOneSchema(t *testing.T) {
	dsn, schema := pgschema.New(t, "cptest_replicas")
	ctx := context.Background()

	const replicas = 4
	stores := make([]*postgres.Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema, MaxConns: 4})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: New: %v", i, err)
		}
		defer stores[i].Close()
	}
	if v, err := stores[0].SchemaVersion(ctx); err != nil || v != 4 {
		t.Fatalf("SchemaVersion = %d, %v; want 4", v, err)
	}

	// Pre-generate ids so the greatest is known, then write them from all
	// replicas in a scrambled order.
	var ids []uuid.UUID
	for range 40 {
		ids = append(ids, uuid.Must(uuid.NewV7()))
	}
	want := ids[len(ids)-1]
	errc := make(chan error, replicas)
	for r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := len(ids) - 1 - r; i >= 0; i -= replicas {
				cp := checkpoint.Checkpoint{ThreadID: "shared", ID: ids[i], Step: i,
					Metadata: map[string]string{"i": fmt.Sprint(i)}, Created: time.Now()}
				if err := stores[r].Put(ctx, cp); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatalf("Put: %v", err)
	}
	for r, s := range stores {
		tu, err := s.Get(ctx, "shared", uuid.Nil)
		if err != nil || tu.Checkpoint.ID != want {
			t.Errorf("replica %d: latest = %v, %v; want %s", r, tu.Checkpoint.ID, err, want)
		}
	}
	ts, err := stores[1].Threads(ctx, checkpoint.ThreadFilter{})
	if err != nil || len(ts) != 1 || ts[0].Latest != want || ts[0].Metadata["i"] != fmt.Sprint(len(ids)-1) {
		t.Errorf("Threads = %+v, %v; want latest %s", ts, err, want)
	}
}

func TestSchemaTooNewIsRefused(t *testing.T) {
	dsn, schema := pgschema.New(t, "cptest_newer")
	ctx := context.Background()
	s, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema}); !errors.Is(err, postgres.ErrSchemaTooNew) {
		t.Fatalf("New on a newer schema: err = %v, want ErrSchemaTooNew", err)
	}
}
