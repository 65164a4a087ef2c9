package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/wiring"
)

// vacuumer is a store that can give freed space back (SQLite shrinks its
// file; PostgreSQL makes the space reusable).
type vacuumer interface {
	Vacuum(ctx context.Context) error
}

// cmdStore maintains the store: `store prune` deletes the intermediate
// checkpoints of finished turns (checkpoint.Pruner).
func cmdStore(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("prune [--keep DURATION] [--vacuum] [--json]")
	keepFlag := fs.String("keep", "", "prune only turns that finished longer ago than this (0: every finished turn); default: checkpoints.keep_intermediate of the configuration")
	vacuum := fs.Bool("vacuum", false, "afterwards, give the freed space back: SQLite rewrites the file (it takes the writer for as long as that lasts: run it when the store is quiet), PostgreSQL runs VACUUM")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "prune" {
		return &UsageError{Command: "store", Problem: "want: store prune [--keep DURATION] [--vacuum]"}
	}
	if len(pos) > 1 {
		return &UsageError{Command: "store", Problem: fmt.Sprintf("unexpected argument %q", pos[1])}
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	var keep time.Duration
	switch k := cfg.Checkpoints.KeepIntermediate; {
	case *keepFlag != "":
		if keep, err = time.ParseDuration(*keepFlag); err != nil || keep < 0 {
			return &UsageError{Command: "store", Problem: fmt.Sprintf("--keep %q: want a duration such as 0, 90m or 24h", *keepFlag)}
		}
	case k != nil && k.Forever:
		return fmt.Errorf("checkpoints.keep_intermediate is true in %s: finished turns keep every checkpoint, so there is nothing to prune (give --keep 0 to prune them anyway)", c.sourceName())
	case k != nil:
		keep = time.Duration(k.For)
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	if c.spec.Kind == wiring.StoreMemory {
		return fmt.Errorf("the memory store keeps nothing between runs of the command: there is nothing to prune (give --store or the configuration's store)")
	}
	p, ok := st.(checkpoint.Pruner)
	if !ok {
		return fmt.Errorf("the store %s cannot prune", c.spec)
	}
	opts := checkpoint.PruneOptions{}
	if keep > 0 {
		opts.FinishedBefore = c.env.Now().Add(-keep)
	}
	res, err := p.Prune(ctx, opts)
	if err != nil {
		return err
	}
	out := storePruned{Store: c.spec.String(), Checkpoints: res.Checkpoints, Writes: res.Writes}
	if *vacuum {
		v, ok := st.(vacuumer)
		if !ok {
			return fmt.Errorf("the store %s cannot vacuum", c.spec)
		}
		before := fileSize(c.spec)
		if err := v.Vacuum(ctx); err != nil {
			return err
		}
		out.Vacuumed = true
		if c.spec.Kind == wiring.StoreSQLite {
			out.BytesBefore, out.BytesAfter = before, fileSize(c.spec)
		}
	}
	if *asJSON {
		return json.NewEncoder(c.env.Stdout).Encode(out)
	}
	what := "every finished turn"
	if keep > 0 {
		what = "turns that finished more than " + keep.String() + " ago"
	}
	fmt.Fprintf(c.env.Stdout, "pruned %d checkpoints and %d pending writes of %s from %s\n", out.Checkpoints, out.Writes, what, out.Store)
	switch {
	case out.Vacuumed && c.spec.Kind == wiring.StoreSQLite:
		fmt.Fprintf(c.env.Stdout, "vacuumed: %s → %s on disk\n", megabytes(out.BytesBefore), megabytes(out.BytesAfter))
	case out.Vacuumed:
		fmt.Fprintln(c.env.Stdout, "vacuumed: the freed space will be reused (PostgreSQL's files do not shrink without VACUUM FULL)")
	}
	return nil
}

// storePruned is what `store prune --json` prints.
type storePruned struct {
	Store       string `json:"store"`
	Checkpoints int64  `json:"checkpoints"`
	Writes      int64  `json:"writes"`
	Vacuumed    bool   `json:"vacuumed"`
	// BytesBefore and BytesAfter are an SQLite store's files on disk (the
	// database and its write-ahead log) before and after vacuuming.
	BytesBefore int64 `json:"bytes_before,omitempty"`
	BytesAfter  int64 `json:"bytes_after,omitempty"`
}

// fileSize is the size of an SQLite store's database and write-ahead log.
func fileSize(s wiring.StoreSpec) int64 {
	if s.Kind != wiring.StoreSQLite {
		return 0
	}
	var n int64
	for _, p := range []string{s.Path, s.Path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// sourceName names the configuration file read, for messages.
func (c *cmdEnv) sourceName() string {
	if c.cfg != nil && c.cfg.Source() != "" {
		return c.cfg.Source()
	}
	return "the configuration"
}
