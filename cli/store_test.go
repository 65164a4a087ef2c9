package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/capgraph/capgraph/cli"
)

// capgraph store prune: a store kept every checkpoint (keep_intermediate:
// true); pruning it leaves each finished turn's last, what `graph --thread`
// and the next turn read, and --vacuum shrinks the file.
func TestStorePrune(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "checkpoints:\n  keep_intermediate: true\n")
	var threads []string
	for _, q := range []string{"Show me the RF cavity voltage over the last 2 hours", "whats the beam current", "Show me the RF cavity voltage"} {
		r := h.run("", "run", q)
		if r.code != cli.ExitOK {
			t.Fatalf("run %q: exit %d: %s", q, r.code, r.stderr)
		}
		threads = append(threads, threadOf(t, r.stderr))
	}
	r := h.run("", "store", "prune")
	if r.code != cli.ExitError {
		t.Fatalf("prune with keep_intermediate true: exit %d, want an error", r.code)
	}
	mustContain(t, "keep_intermediate true", r.stderr, "checkpoints.keep_intermediate is true", "--keep 0")

	r = h.run("", "store", "prune", "--keep", "0", "--vacuum", "--json")
	if r.code != cli.ExitOK {
		t.Fatalf("prune --keep 0: exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		Store       string `json:"store"`
		Checkpoints int64  `json:"checkpoints"`
		Vacuumed    bool   `json:"vacuumed"`
		Before      int64  `json:"bytes_before"`
		After       int64  `json:"bytes_after"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("--json: %v: %s", err, r.stdout)
	}
	if out.Checkpoints < 3*5 || !out.Vacuumed || !strings.HasPrefix(out.Store, "sqlite:") || out.After <= 0 || out.After >= out.Before {
		t.Fatalf("prune result %s: want every turn's intermediate checkpoints gone and a smaller file", r.stdout)
	}

	// What was read from the thread still is.
	r = h.run("", "graph", "--thread", threads[0])
	mustContain(t, "plan after pruning", r.stdout, `s2["2. archiver_retrieval: done"]`, "plan 1 of the last turn:")
	// A turn after pruning, with the default retention (false): its
	// intermediate checkpoints go with its last commit, nothing is left to
	// prune.
	h.writeConfig("capgraph.yaml", "")
	r = h.run("", "run", "--thread", threads[0], "and over the last hour?")
	if r.code != cli.ExitOK {
		t.Fatalf("a turn after pruning: exit %d: %s", r.code, r.stderr)
	}
	r = h.run("", "store", "prune")
	mustContain(t, "nothing left", r.stdout, "pruned 0 checkpoints and 0 pending writes of every finished turn from sqlite:")
	r = h.run("", "store", "prune", "--keep", "24h")
	mustContain(t, "--keep 24h", r.stdout, "of turns that finished more than 24h0m0s ago")

	for _, bad := range [][]string{{"store"}, {"store", "vacuum"}, {"store", "prune", "extra"}, {"store", "prune", "--keep", "soon"}, {"store", "prune", "--keep", "-1h"}} {
		if r := h.run("", bad...); r.code != cli.ExitUsage {
			t.Errorf("%v: exit %d, want a usage error: %s", bad, r.code, r.stderr)
		}
	}
	r = h.run("", "--store", "memory", "store", "prune")
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "nothing to prune") {
		t.Errorf("prune of the memory store: exit %d: %s", r.code, r.stderr)
	}
}
