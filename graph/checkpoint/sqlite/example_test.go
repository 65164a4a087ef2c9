package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/sqlite"
)

func ExampleNew() {
	dir, err := os.MkdirTemp("", "capgraph-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.New(sqlite.Config{Path: filepath.Join(dir, "checkpoints.db")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	ctx := context.Background()
	err = store.Put(ctx, checkpoint.Checkpoint{
		ThreadID: "chat-1",
		ID:       uuid.Must(uuid.NewV7()),
		State:    json.RawMessage(`{"turns":1}`),
		Metadata: map[string]string{"owner": "alice"},
	})
	if err != nil { // when Put returns nil, the checkpoint is on disk
		fmt.Println(err)
		return
	}
	latest, _ := store.Get(ctx, "chat-1", uuid.Nil)
	fmt.Println(string(latest.Checkpoint.State))

	mine, _ := store.Threads(ctx, checkpoint.ThreadFilter{Metadata: map[string]string{"owner": "alice"}})
	fmt.Println(len(mine), mine[0].ThreadID)
	// Output:
	// {"turns":1}
	// 1 chat-1
}
