package postgres_test

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/internal/pgschema"
)

// A closed store leaves nothing behind: the pool's goroutines have ended
// and nothing outside the store keeps it reachable.
func TestClosedStoreLeavesNothingBehind(t *testing.T) {
	dsn, schema := pgschema.New(t, "lifetime")
	before := goleak.IgnoreCurrent()
	ctx := context.Background()
	s, err := postgres.New(ctx, postgres.Config{DSN: dsn, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := uuid.NewV7()
	if err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: "t1", ID: id, State: json.RawMessage(`{}`), Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendRecords(ctx, checkpoint.Record{Kind: "test", Thread: "t1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "t1", "owner", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, before)
	w := weak.Make(s)
	s = nil
	for range 20 {
		runtime.GC()
		if w.Value() == nil {
			return
		}
	}
	t.Fatal("the closed store is still reachable after 20 garbage collections: something outside it refers to it")
}
