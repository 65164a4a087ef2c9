package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/schedule"
	"github.com/capgraph/capgraph/schedule/spec"
	"github.com/capgraph/capgraph/wiring"
)

// `capgraph schedules` lists each schedule with its next due time in its
// zone and its last run's outcome from the store; a schedule naming a
// capability the application does not have is refused with its line.
func TestSchedulesListsNextRunAndLastOutcome(t *testing.T) {
	h := controlRoom(t)
	db := filepath.Join(h.dir, "ops.db")
	h.writeConfig("capgraph.yaml", "store: sqlite:"+db+`
schedules:
  morning_beam:
    cron: "0 7 * * *"
    timezone: Europe/Berlin
    input: What is the beam current?
    allowed_capabilities: [channel_finding, channel_read]
  weekly_vacuum:
    cron: "30 6 * * 1"
    input: What is the vacuum pressure in sector 3?
`)
	r := h.run("", "schedules")
	if r.code != cli.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mustContain(t, "schedules", r.stdout, "morning_beam\n  when  0 7 * * * (Europe/Berlin)\n  next  ", " 07:00 CE", "  last  never ran",
		"weekly_vacuum\n  when  30 6 * * 1 (UTC)\n  next  ")

	// One run of morning_beam, by a scheduler over the same store, at
	// 07:00 Berlin on 27 November 2026.
	ctx := context.Background()
	st, closeStore, err := wiring.OpenStore(ctx, wiring.StoreSpec{Kind: wiring.StoreSQLite, Path: db})
	if err != nil {
		t.Fatal(err)
	}
	c := capabilities.Define(capabilities.Definition{Name: "read_beam_current", Description: "Read the beam current of the storage ring",
		Provides: []string{"BEAM_CURRENT"}, Run: func(context.Context, capabilities.Step) (capabilities.Output, error) {
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		}})
	reg := capabilities.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	when, _ := spec.Parse("0 7 * * *", "Europe/Berlin")
	s, err := schedule.New(schedule.Config{Schedules: []schedule.Schedule{{Name: "morning_beam", When: when, Input: "What is the beam current?"}},
		Runner: a, Store: st.(schedule.Store), Owner: "test", Now: func() time.Time { return time.Date(2026, 11, 27, 6, 0, 30, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Tick(ctx); len(got) != 1 || got[0].Outcome != schedule.OutcomeAnswered {
		t.Fatalf("ran %+v", got)
	}
	a.Close(ctx)
	closeStore()
	r = h.run("", "schedules")
	mustContain(t, "schedules after a run", r.stdout, "  last  answered (due 2026-11-27 07:00 CET, thread schedule-morning_beam-20261127T060000Z)", "  last  never ran")

	h.writeConfig("capgraph.yaml", "schedules:\n  morning_beam:\n    cron: \"0 7 * * *\"\n    input: What is the beam current?\n    allowed_capabilities: [beam_reader]\n")
	r = h.run("", "config", "check")
	if r.code == cli.ExitOK || !strings.Contains(r.stdout, `schedules.morning_beam.allowed_capabilities[0]: no capability "beam_reader" is registered`) {
		t.Fatalf("config check: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// serve starts the scheduler of the configured schedules and says so.
func TestServeStartsTheSchedules(t *testing.T) {
	h := controlRoom(t)
	h.writeConfig("capgraph.yaml", "store: memory\nschedules:\n  morning_beam:\n    cron: \"0 7 * * *\"\n    input: What is the beam current?\n")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- h.app.Run(ctx, h.environment(strings.NewReader(""), &stdout, &stderr, []string{"serve", "--addr", "127.0.0.1:0"}))
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stdout.String(), "Press Ctrl-C to stop.") {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q", stdout.String())
		}
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	mustContain(t, "banner", stdout.String(), "schedules:", "1 (list them: capgraph schedules)")
}

// Under serve a schedule's runs are the server's, its principal's: the
// ops key finds the run's thread in its list and its answered run; another
// key sees nothing of it.
func TestServeRunsSchedulesAsTheirPrincipal(t *testing.T) {
	h := controlRoom(t)
	h.env["CAPGRAPH_API_KEYS"] = "ops=0123456789abcdef-ops,guest=0123456789abcdef-guest"
	h.writeConfig("capgraph.yaml", `store: memory
schedules:
  every_minute:
    cron: "* * * * *"
    input: What is the beam current?
    principal: ops
`)
	sv := startServe(h, h.app, "--addr", "127.0.0.1:0")
	defer sv.stop()
	sv.waitFor(t, &sv.out, "web page:", "serve did not start")
	m := pageLine.FindStringSubmatch(sv.out.String())
	if m == nil {
		t.Fatalf("no web page line: %s", sv.out.String())
	}
	get := func(path, key string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, m[1]+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	// The minute's due time runs at once (it is less than CatchUp late).
	var threads struct {
		Threads []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"threads"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := json.Unmarshal([]byte(get("/api/threads", "0123456789abcdef-ops")), &threads); err != nil {
			t.Fatal(err)
		}
		if len(threads.Threads) == 1 && threads.Threads[0].Status == "answered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ops never saw the scheduled run answered: %+v", threads)
		}
		time.Sleep(50 * time.Millisecond)
	}
	th := threads.Threads[0].ID
	if !strings.HasPrefix(th, "schedule-every_minute-") {
		t.Fatalf("thread %q", th)
	}
	if st := get("/api/threads/"+th+"/state", "0123456789abcdef-ops"); !strings.Contains(st, "What is the beam current?") || !strings.Contains(st, "SR:DCCT:CURRENT") {
		t.Fatalf("the scheduled turn's state: %.600s", st)
	}
	if got := get("/api/threads", "0123456789abcdef-guest"); strings.Contains(got, "schedule-") {
		t.Fatalf("another key lists the scheduled thread: %s", got)
	}
}
