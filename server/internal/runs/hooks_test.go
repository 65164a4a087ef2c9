package runs

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/logging"
	lifecycle "github.com/capgraph/capgraph/server/internal/run"
)

// recordingHooks notes what the manager asks of the server, in order.
type recordingHooks struct {
	mu    sync.Mutex
	calls []string
	parks chan time.Time
}

func (h *recordingHooks) note(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf(format, args...))
}

func (h *recordingHooks) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

func (h *recordingHooks) Begin(_ context.Context, r *testRun) Observer {
	h.note("begin %s", r.ID)
	return recordingObserver{h}
}

func (h *recordingHooks) Park(r *testRun, until time.Time) {
	h.note("park %s", r.ID)
	h.parks <- until
}

func (h *recordingHooks) Settle(r *testRun, status agent.RunStatus, err error, shutdown bool) {
	h.note("settle %s %s %v %v", r.ID, status, err, shutdown)
}

func (h *recordingHooks) ThreadFreed(thread string) { h.note("freed %s", thread) }
func (h *recordingHooks) HandedBack(r *testRun)     { h.note("handed back %s", r.ID) }

type recordingObserver struct{ h *recordingHooks }

func (o recordingObserver) Action(_ context.Context, rec *agent.AuditRecord) *agent.AuditRecord {
	o.h.note("action %s", rec.Capability)
	return nil // clients see nothing of it
}
func (o recordingObserver) Observe(_ context.Context, ev agent.Event) {
	o.h.note("observe %s", ev.Type)
}
func (o recordingObserver) Logged(ev agent.Event) { o.h.note("logged %s %d", ev.Type, ev.Seq) }
func (o recordingObserver) Finish(_ context.Context, status agent.RunStatus, _ time.Time) {
	o.h.note("finish %s", status)
}

func newRecordingManager(h *recordingHooks) *Manager[*testRun] {
	return New(Deps[*testRun]{Hooks: h, Logger: logging.Nop(), Now: time.Now, MaxConcurrentRuns: 4,
		EventLogSize: 4096, TurnTimeout: time.Minute, ParkAfter: time.Second})
}

func events(evs ...agent.Event) Call {
	return func(context.Context) iter.Seq2[agent.Event, error] {
		return func(yield func(agent.Event, error) bool) {
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
		}
	}
}

// A run's agent call goes through the server's hooks in order: begun,
// each event observed before it is logged (an audited action is not
// logged when the observer hides it), the end observed, the record
// settled, the thread freed. On one process the run's followers are told
// of its end before the record is settled (Settled closes after it); with
// replicas, after the thread is freed.
func TestTheServersHooksSeeARunInOrder(t *testing.T) {
	for _, replicas := range []bool{false, true} {
		t.Run(fmt.Sprintf("replicas=%v", replicas), func(t *testing.T) {
			h := &recordingHooks{}
			m := newRecordingManager(h)
			m.d.Replicas = replicas
			r, err := startFn(m, "t", "internal-t", events(
				agent.Event{Type: agent.EventToken, Text: "x"},
				agent.Event{Type: agent.EventAudit, Audit: &agent.AuditRecord{Capability: "set_magnet"}},
				agent.Event{Type: agent.EventDone, Status: agent.RunAnswered}))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Follow(context.Background(), 0, time.Second, nil, func(agent.Event) {}, nil) {
				t.Fatal("the run did not end")
			}
			h.note("followers told")
			if settled := r.Settled(); settled != nil {
				<-settled
			}
			want := []string{"begin run-t", "observe token", "logged token 1", "action set_magnet", "observe done", "logged done 2",
				"finish answered", "settle run-t answered <nil> false", "freed internal-t"}
			if replicas {
				want = want[:len(want)-1] // no thread freed: the replicas share the queue
			}
			got := h.seen()
			told := slices.Index(got, "followers told")
			got = slices.Delete(got, told, told+1)
			if !slices.Equal(got, want) {
				t.Fatalf("hooks saw\n%q\nwant\n%q", got, want)
			}
			// One process: told at the run's end, before or while its record is
			// written (TestTheNextRunWaitsForTheRecord holds the write);
			// replicas: only once it is written.
			if first := slices.Index(want, "settle run-t answered <nil> false"); told <= slices.Index(want, "finish answered") || replicas && told <= first {
				t.Fatalf("the followers were told at %d of %q", told, want)
			}
			if st, err, _ := r.Result(); st != agent.RunAnswered || err != nil || r.State() != lifecycle.Finished {
				t.Fatalf("run ended %s %v in %s", st, err, r.State())
			}
			if _, busy := m.ActiveOn("internal-t"); busy {
				t.Fatal("the thread is still held")
			}
		})
	}
}

// blockingHooks hold Settle until release is closed.
type blockingHooks struct {
	nopHooks
	settling chan struct{} // closed as Settle starts
	release  chan struct{}
}

func (h *blockingHooks) Settle(*testRun, agent.RunStatus, error, bool) {
	close(h.settling)
	<-h.release
}

// On one process a run's followers see it end while its record is still
// being written; meanwhile the thread counts as free for every check
// (ActiveOn), but its next run waits in Reserve until the record is
// written, and Settled closes then.
func TestTheNextRunWaitsForTheRecord(t *testing.T) {
	h := &blockingHooks{settling: make(chan struct{}), release: make(chan struct{})}
	m := New(Deps[*testRun]{Hooks: h, Logger: logging.Nop(), Now: time.Now, MaxConcurrentRuns: 4,
		EventLogSize: 4096, TurnTimeout: time.Minute})
	r, err := startFn(m, "t", "internal-t", events(agent.Event{Type: agent.EventDone, Status: agent.RunAnswered}))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Follow(context.Background(), 0, time.Second, nil, func(agent.Event) {}, nil) {
		t.Fatal("the run did not end")
	}
	<-h.settling
	settled := r.Settled()
	if settled == nil {
		t.Fatal("the run ended before its record was written, and Settled does not say so")
	}
	if _, busy := m.ActiveOn("internal-t"); busy {
		t.Fatal("ActiveOn names a run that has ended")
	}
	next := make(chan error, 1)
	go func() {
		_, err := m.Reserve(Spec{ID: "run-next", Thread: "internal-t", ClientThread: "t", OwnerKey: "alice", LimitKey: "alice"},
			func(core *Run[*testRun]) *testRun { return &testRun{core} })
		next <- err
	}()
	select {
	case err := <-next:
		t.Fatalf("the next run was reserved (%v) while the record of the last was being written", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(h.release)
	if err := <-next; err != nil {
		t.Fatalf("the next run, once the record is written: %v", err)
	}
	select {
	case <-settled:
	default:
		t.Fatal("Settled is still open after the record was written")
	}
}

// A call that ends waiting for a retry parks the run: the server is told
// when it goes on (Hooks.Park, which frees the thread: ReleaseParked),
// nothing is settled nor freed here, and the run is the process's to end
// (Wait does not return) until it is finished.
func TestAParkedRunIsNotSettled(t *testing.T) {
	h := &recordingHooks{parks: make(chan time.Time, 1)}
	m := newRecordingManager(h)
	due := time.Now().Add(time.Hour)
	r, err := startFn(m, "p", "internal-p", events(
		agent.Event{Type: agent.EventToken, Text: "x"},
		agent.Event{Type: agent.EventDone, Status: agent.RunWaiting, NotBefore: due}))
	if err != nil {
		t.Fatal(err)
	}
	if until := <-h.parks; !until.Equal(due) {
		t.Fatalf("parked until %v; want %v", until, due)
	}
	m.Must(r, lifecycle.Park)
	if r.State() != lifecycle.Parked || r.IsFinished() {
		t.Fatalf("the parked run is %s", r.State())
	}
	for _, c := range h.seen() {
		if c == "freed internal-p" || len(c) > 6 && c[:6] == "settle" {
			t.Fatalf("a parked run was ended: %q", h.seen())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := m.Wait(ctx); err == nil {
		t.Fatal("Wait returned while a run was parked")
	}
	m.Finish(r, nil, EndedHere)
	if err := m.Wait(context.Background()); err != nil || !r.IsFinished() {
		t.Fatalf("Wait after the end: %v, finished %v", err, r.IsFinished())
	}
}
