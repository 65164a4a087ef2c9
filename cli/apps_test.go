package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
)

// Issue 12: every application built with cli.App used one database, so
// `capgraph serve` finished another application's cut run with its own
// agent and `myagent chat --thread` continued another application's
// conversation. Each application keeps its threads in a store of its own,
// and in a store two applications share, each refuses the other's threads.
func TestApplicationsKeepTheirOwnThreads(t *testing.T) {
	crApp, started, finds, reads := cutApp()
	h := newHarness(t, crApp)
	myApp, _, _, myReads := cutApp() // the same capabilities, another application
	myApp.Name = "myagent"
	mine := &harness{t: t, app: myApp, dir: h.dir, env: h.env}

	// Default stores: one per application, in its own data directory.
	for _, hh := range []*harness{h, mine} {
		if r := hh.run("", "graph", "--thread", "none"); r.code != cli.ExitError {
			t.Fatalf("%s graph: exit %d", hh.app.Name, r.code)
		}
	}
	for _, p := range []string{"capgraph/capgraph.db", "myagent/myagent.db"} {
		if _, err := statFile(filepath.Join(h.env["XDG_DATA_HOME"], p)); err != nil {
			t.Errorf("no default store %s: %v", p, err)
		}
	}

	// One store shared on purpose: control-room's cut run stays its own.
	h.writeConfig("capgraph.yaml", "store: sqlite:"+filepath.Join(h.dir, "shared.db")+"\n")
	cutRun(t, h, started)
	r := mine.run("", "chat", "--thread", "cut")
	if r.code != cli.ExitError {
		t.Fatalf("myagent chat --thread cut: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mustContain(t, "myagent chat", r.stderr, `thread "cut" belongs to application "capgraph", not to application "myagent"`)
	sv := startServe(mine, myApp, "--addr", "127.0.0.1:0")
	sv.waitFor(t, &sv.out, "Press Ctrl-C to stop.", "no banner")
	time.Sleep(300 * time.Millisecond) // the start-up recovery has run by now (it found nothing of its own)
	if code := sv.stop(); code != cli.ExitOK {
		t.Fatalf("myagent serve exit %d: %s", code, sv.errb.String())
	}
	if strings.Contains(sv.errb.String(), "resumed runs") || myReads.Load() != 0 {
		t.Fatalf("myagent's serve resumed control-room's run (reads %d): %s", myReads.Load(), sv.errb.String())
	}
	// Its own application finishes it.
	r = h.run("", "chat", "--thread", "cut")
	mustContain(t, "capgraph chat", r.stdout, "(the last run was interrupted; finishing it)", "sensor S1 reads 42.0")
	if finds.Load() != 1 || reads.Load() != 2 {
		t.Errorf("find ran %d times, read %d; want 1 and 2", finds.Load(), reads.Load())
	}
}
