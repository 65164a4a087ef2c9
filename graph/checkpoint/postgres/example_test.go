package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres"
)

// Several replicas open the same database and schema; each may run any thread.
// (No Output: it needs a server, e.g. the one scripts/setup/postgres.sh starts.)
func ExampleNew() {
	ctx := context.Background()
	store, err := postgres.New(ctx, postgres.Config{
		DSN:    os.Getenv("CAPGRAPH_POSTGRES_URL"), // postgres://user:pass@host:5432/db
		Schema: "capgraph",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	threads, err := store.Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "alice"}, Limit: 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range threads {
		fmt.Println(t.ThreadID, t.Updated)
	}
}
