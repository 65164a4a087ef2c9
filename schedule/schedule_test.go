package schedule_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/graph/checkpoint/postgres/pgtest"
	"github.com/capgraph/capgraph/internal/outcometest"
	"github.com/capgraph/capgraph/schedule"
	"github.com/capgraph/capgraph/schedule/spec"
	"github.com/capgraph/capgraph/state"
)

// fakeClock is the schedulers' clock, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// beamReader is a read capability that counts its calls.
func beamReader(t *testing.T, calls *atomic.Int32) *capabilities.Registry {
	t.Helper()
	c := capabilities.Define(capabilities.Definition{
		Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
		ClassifierGuide: &capabilities.ClassifierGuide{Instructions: "Use for questions about the beam current.",
			Examples: []capabilities.ClassifierExample{{Query: "what is the beam current?", Result: true, Reason: "asks for the beam current"}}},
		Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
			calls.Add(1)
			return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
		},
	})
	reg := capabilities.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

func mustSpec(t *testing.T, expr, tz string) spec.Spec {
	t.Helper()
	s, err := spec.Parse(expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// webhook is a receiver of schedule webhooks.
func webhook(t *testing.T) (*httptest.Server, func() []schedule.Result) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []schedule.Result
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var res schedule.Result
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &res) != nil {
			t.Errorf("webhook got %s %s %s", r.Method, r.Header.Get("Content-Type"), b)
		}
		mu.Lock()
		got = append(got, res)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []schedule.Result {
		mu.Lock()
		defer mu.Unlock()
		return append([]schedule.Result(nil), got...)
	}
}

// Two replicas on one PostgreSQL database, each with its own agent and
// scheduler, tick at every due time at once: each due time runs exactly
// once, in a thread of its own, and its outcome reaches the webhook once.
// A scheduler started anew (a restart, with another owner) within the
// catch-up window of a due time that already ran does not run it again,
// and runs the next one once. Fake clock.
func TestOncePerDueTimeAcrossReplicasOnPostgres(t *testing.T) {
	stores := pgtest.Replicas(t, 3)
	clock := &fakeClock{now: time.Date(2026, 11, 27, 8, 59, 0, 0, time.UTC)}
	var calls atomic.Int32
	hook, posted := webhook(t)
	sc := schedule.Schedule{Name: "hourly_beam", When: mustSpec(t, "0 * * * *", "Europe/Berlin"),
		Input: "What is the beam current?", AllowedCapabilities: []string{"read_beam_current"}, WebhookURL: hook.URL}
	newScheduler := func(i int, owner string) *schedule.Scheduler {
		a, err := agent.New(agent.Config{Registry: beamReader(t, &calls), Store: stores[i], Leases: agent.LeaseConfig{Owner: owner}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(context.Background()) })
		s, err := schedule.New(schedule.Config{Schedules: []schedule.Schedule{sc}, Runner: a, Store: stores[i], Owner: owner, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	replicas := []*schedule.Scheduler{newScheduler(0, "replica-0"), newScheduler(1, "replica-1")}
	tickAll := func(at time.Time) []schedule.Result {
		clock.set(at)
		var (
			mu  sync.Mutex
			all []schedule.Result
			wg  sync.WaitGroup
		)
		for _, s := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := s.Tick(context.Background())
				mu.Lock()
				all = append(all, r...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return all
	}
	if r := tickAll(clock.Now()); len(r) != 0 {
		t.Fatalf("before the first due time: ran %+v", r)
	}
	nine := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC) // 10:00 in Berlin
	for i, at := range []time.Time{nine.Add(2 * time.Second), nine.Add(20 * time.Second), nine.Add(time.Hour + time.Second)} {
		r := tickAll(at)
		want := 1
		if i == 1 {
			want = 0 // the same due time, ticked again
		}
		if len(r) != want {
			t.Fatalf("tick at %s: %d runs %+v, want %d", at, len(r), r, want)
		}
		for _, res := range r {
			if res.Outcome != schedule.OutcomeAnswered || res.Thread != sc.ThreadOf(res.Due) {
				t.Fatalf("run %+v, want answered in its own thread", res)
			}
		}
	}
	// A restart: replica 1 is replaced by a new process (new owner) 30 s
	// after the 10:00 UTC due time, which replica 0 or 1 ran already.
	replicas[1] = newScheduler(2, "replica-2")
	if r := tickAll(nine.Add(time.Hour + 30*time.Second)); len(r) != 0 {
		t.Fatalf("after the restart: ran %+v again", r)
	}
	if r := tickAll(nine.Add(2*time.Hour + time.Second)); len(r) != 1 {
		t.Fatalf("the next due time after the restart: %d runs, want 1", len(r))
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("the capability ran %d times, want 3 (one per due time)", n)
	}
	if p := posted(); len(p) != 3 || p[0].Due.Equal(p[1].Due) || p[1].Due.Equal(p[2].Due) {
		t.Fatalf("webhook posts %+v, want one per due time", p)
	}
	st, err := schedule.Statuses(context.Background(), stores[0], []schedule.Schedule{sc}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Last == nil || st[0].Last.Outcome != schedule.OutcomeAnswered ||
		!st[0].Last.Due.Equal(nine.Add(2*time.Hour)) || !st[0].Next.Equal(nine.Add(3*time.Hour)) {
		t.Fatalf("status %+v (last %+v)", st, st[0].Last)
	}
}

// runOnce runs sc once on a memory store at its first due time.
func runOnce(t *testing.T, a *agent.Agent, store *memory.Store, sc schedule.Schedule) schedule.Result {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 11, 27, 7, 0, 1, 0, time.UTC)}
	s, err := schedule.New(schedule.Config{Schedules: []schedule.Schedule{sc}, Runner: a, Store: store, Owner: "only", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Tick(context.Background())
	if len(r) != 1 {
		t.Fatalf("%d runs, want 1", len(r))
	}
	return r[0]
}

// A scheduled run's writes: off unless the schedule says so (the write is
// refused, nothing written); with writes, the approval policy applies and
// nobody is there to approve: the run waits for a human, nothing written;
// a capability outside the schedule's list is never used.
func TestScheduledWritesAndAllowedCapabilities(t *testing.T) {
	plant := outcometest.New()
	caps, err := plant.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	reg := capabilities.NewRegistry()
	for _, c := range caps {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	store := memory.New()
	a, err := agent.New(agent.Config{Registry: reg, Store: store, Options: state.Options{WritesEnabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	daily := mustSpec(t, "0 7 * * *", "")
	for _, tc := range []struct {
		name    string
		sc      schedule.Schedule
		outcome string
		says    string
	}{
		{"writes off", schedule.Schedule{Name: "set_q1_off", When: daily, Input: "Set the Q1 current to 105 A"}, schedule.OutcomeNotAnswered,
			"Writes are disabled by this turn's options"},
		{"writes on: waits for a human", schedule.Schedule{Name: "set_q1_on", When: daily, Input: "Set the Q1 current to 105 A", Writes: true},
			schedule.OutcomeWaiting, ""},
		{"not in the list", schedule.Schedule{Name: "set_q1_denied", When: daily, Input: "Set the Q1 current to 105 A", Writes: true,
			AllowedCapabilities: []string{}}, schedule.OutcomeNotAnswered, "which this caller is not allowed to use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runOnce(t, a, store, tc.sc)
			if r.Outcome != tc.outcome || !strings.Contains(r.Message, tc.says) {
				t.Fatalf("outcome %q (%s), want %q saying %q", r.Outcome, r.Message, tc.outcome, tc.says)
			}
			if w := plant.Writes(); len(w) != 0 {
				t.Fatalf("written: %v", w)
			}
		})
	}
	// The waiting run is a thread like any other: a human approves it there.
	th := schedule.Schedule{Name: "set_q1_on", When: daily}.ThreadOf(time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC))
	s, status, err := a.State(context.Background(), th)
	if err != nil || status != agent.RunInterrupted || s.Turn.PendingApproval == nil {
		t.Fatalf("thread %s: %v, %v, want it waiting for an approval", th, status, err)
	}
}

// thread: keep makes every run a turn of one thread; a due time older
// than CatchUp (every replica was down) is skipped, the next runs.
func TestKeptThreadAndMissedDueTimes(t *testing.T) {
	var calls atomic.Int32
	store := memory.New()
	a, err := agent.New(agent.Config{Registry: beamReader(t, &calls), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	clock := &fakeClock{now: time.Date(2026, 11, 27, 7, 0, 1, 0, time.UTC)}
	sc := schedule.Schedule{Name: "beam", When: mustSpec(t, "0 * * * *", ""), Input: "What is the beam current?", KeepThread: true}
	s, err := schedule.New(schedule.Config{Schedules: []schedule.Schedule{sc}, Runner: a, Store: store, Owner: "only", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Tick(context.Background()); len(r) != 1 || r[0].Thread != "schedule-beam" || r[0].Outcome != schedule.OutcomeAnswered {
		t.Fatalf("first: %+v", r)
	}
	clock.set(time.Date(2026, 11, 27, 9, 10, 0, 0, time.UTC)) // 08:00 missed, 09:00 ten minutes late
	if r := s.Tick(context.Background()); len(r) != 0 {
		t.Fatalf("a due time older than CatchUp ran: %+v", r)
	}
	clock.set(time.Date(2026, 11, 27, 10, 0, 2, 0, time.UTC))
	if r := s.Tick(context.Background()); len(r) != 1 || r[0].Thread != "schedule-beam" {
		t.Fatalf("next: %+v", r)
	}
	st, _, err := a.State(context.Background(), "schedule-beam")
	if err != nil {
		t.Fatal(err)
	}
	users := 0
	for _, m := range st.Messages {
		if m.Role == state.RoleUser {
			users++
		}
	}
	if users != 2 || calls.Load() != 2 {
		t.Fatalf("%d turns in the kept thread, %d reads; want 2 and 2", users, calls.Load())
	}
}
