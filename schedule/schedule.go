package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/schedule/spec"
	"github.com/capgraph/capgraph/state"
)

// DefaultPollInterval is how often Run looks for due schedules.
const DefaultPollInterval = 15 * time.Second

// CatchUp is how late a due time may still be run: a replica that finds a
// due time older than this (it was down, or stuck) skips it; the next due
// time runs as usual.
const CatchUp = 5 * time.Minute

// claimTTL is how long the claim of one due time lasts: longer than
// CatchUp, so no replica can claim a due time again while any replica
// would still run it.
const claimTTL = 2 * CatchUp

// webhookTimeout bounds one webhook POST.
const webhookTimeout = 30 * time.Second

// RecordKind is the kind of the store records a scheduler keeps (one
// "fired" and one "ended" record per run; `capgraph schedules` reads them).
const RecordKind = "schedule"

// Record events.
const (
	EventFired = "fired"
	EventEnded = "ended"
)

// Outcomes of a scheduled run, in its ended record and webhook.
const (
	OutcomeAnswered    = "answered"     // an answer
	OutcomeNotAnswered = "not_answered" // the error report, a refusal, clarifying questions
	OutcomeWaiting     = "waiting_for_approval"
	OutcomeFailed      = "failed" // a FATAL failure, or the run could not start (the thread busy, …)
	OutcomeCanceled    = "canceled"
)

// Schedule is one scheduled run.
type Schedule struct {
	// Name identifies it (lower_snake_case); it names its threads and records.
	Name string
	// When is its cron expression and zone.
	When spec.Spec
	// Input is the message each run starts with.
	Input string
	// KeepThread makes every run a turn of one thread (ThreadOf); false
	// starts a thread per due time.
	KeepThread bool
	// AllowedCapabilities are the only capabilities a run may use; nil
	// allows all.
	AllowedCapabilities []string
	// Writes lets a run's side-effecting steps go ahead under the
	// configuration's write switch and approval policy: a write then waits
	// for a human's approval, as nobody is there to give it. False turns
	// writes off for the run.
	Writes bool
	// WebhookURL, when set, receives each run's Result as a JSON POST.
	WebhookURL string
	// Principal and Tenant name the API key the runs belong to when they
	// run as a server's (Config.RunFor): its holder lists their threads,
	// follows the runs and answers their approvals. Empty: the keyless
	// caller on a server without keys, else nobody's key.
	Principal, Tenant string
}

// ThreadOf is the thread of the run due at due.
func (s Schedule) ThreadOf(due time.Time) string {
	if s.KeepThread {
		return "schedule-" + s.Name
	}
	return "schedule-" + s.Name + "-" + due.UTC().Format("20060102T150405Z")
}

// Store is what the scheduler needs of the checkpoint store: leases to
// claim a due time (one replica runs it) and the record log for outcomes.
type Store interface {
	checkpoint.Leaser
	checkpoint.RecordLog
}

// Config configures a Scheduler.
type Config struct {
	Schedules []Schedule
	// Runner runs the turns (the agent), unless RunFor is set.
	Runner agent.Runner
	// RunFor, when set, runs each turn instead of Runner, as a run of a
	// server owned by the schedule's Principal (capgraph serve:
	// server.Server.RunFor), so a write that waits for an approval can be
	// answered with that key, on the page or the API. Its stream is
	// agent.Runner's Run's.
	RunFor func(ctx context.Context, s Schedule, req agent.TurnRequest) iter.Seq2[agent.Event, error]
	// Store claims due times and keeps the records; shared by every
	// replica, so each due time runs once across them.
	Store Store
	// Owner names this replica in the claims (the agent's lease owner).
	Owner string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// PollInterval: default DefaultPollInterval.
	PollInterval time.Duration
	// HTTPClient posts webhooks; default a client with webhookTimeout.
	HTTPClient *http.Client
	// Logger; default none.
	Logger logging.Logger
}

// Result is what became of one run: in its ended record, and the body of
// its webhook POST.
type Result struct {
	Schedule string    `json:"schedule"`
	Due      time.Time `json:"due"`
	Thread   string    `json:"thread"`
	Outcome  string    `json:"outcome"`
	// Message is the turn's assistant message (the answer, the report).
	Message string `json:"message,omitempty"`
	// Error says why a run failed.
	Error string `json:"error,omitempty"`
}

// Scheduler runs schedules at their due times.
type Scheduler struct {
	cfg  Config
	mu   sync.Mutex
	next map[string]time.Time // schedule → its next due time to consider
	busy map[string]bool      // schedule → a run of this replica is in progress
	wg   sync.WaitGroup
}

// New checks cfg and returns its scheduler.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Runner == nil && cfg.RunFor == nil || cfg.Store == nil {
		return nil, errors.New("schedule: Config.Runner (or RunFor) and Config.Store are required")
	}
	if cfg.Owner == "" {
		return nil, errors.New("schedule: Config.Owner is required (it names this replica in the claims)")
	}
	seen := map[string]bool{}
	for _, s := range cfg.Schedules {
		if s.Name == "" || seen[s.Name] {
			return nil, fmt.Errorf("schedule: name %q is empty or used twice", s.Name)
		}
		seen[s.Name] = true
		if strings.TrimSpace(s.Input) == "" {
			return nil, fmt.Errorf("schedule %s: no input", s.Name)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: webhookTimeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = logging.Nop()
	}
	return &Scheduler{cfg: cfg, next: map[string]time.Time{}, busy: map[string]bool{}}, nil
}

// Run looks for due schedules every PollInterval until ctx is done, then
// waits for the runs it started.
func (s *Scheduler) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		s.start(ctx)
		select {
		case <-ctx.Done():
			s.wg.Wait()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Tick runs what is due now and waits for those runs: Run's step, for
// tests on a fake clock.
func (s *Scheduler) Tick(ctx context.Context) []Result {
	var (
		mu  sync.Mutex
		out []Result
	)
	for _, f := range s.due() {
		s.wg.Add(1)
		func() {
			defer s.wg.Done()
			if r, ok := s.fire(ctx, f.sc, f.at); ok {
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			}
		}()
	}
	return out
}

// start starts what is due now on goroutines of its own.
func (s *Scheduler) start(ctx context.Context) {
	for _, f := range s.due() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.fire(ctx, f.sc, f.at)
		}()
	}
}

type dueRun struct {
	sc Schedule
	at time.Time
}

// due advances every schedule past now and returns the due times to run:
// per schedule the latest due time within CatchUp, unless a run of it is
// still in progress here.
func (s *Scheduler) due() []dueRun {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []dueRun
	for _, sc := range s.cfg.Schedules {
		next, ok := s.next[sc.Name]
		if !ok {
			// A restarted replica looks back CatchUp: a due time it missed
			// while down still runs, unless another replica ran it.
			next = sc.When.Next(now.Add(-CatchUp))
		}
		var at time.Time
		for !next.IsZero() && !next.After(now) {
			at, next = next, sc.When.Next(next)
		}
		s.next[sc.Name] = next
		if at.IsZero() || now.Sub(at) > CatchUp {
			continue
		}
		if s.busy[sc.Name] {
			s.cfg.Logger.Warn("schedule: a run is still in progress; this due time is skipped", "schedule", sc.Name, "due", at)
			continue
		}
		s.busy[sc.Name] = true
		out = append(out, dueRun{sc, at})
	}
	return out
}

// claimKey is the lease that claims one due time of a schedule.
func claimKey(name string, due time.Time) string {
	return "schedule/" + name + "/" + due.UTC().Format(time.RFC3339)
}

// fire runs the schedule's due time unless another replica claimed it;
// ok is false when it did not run here.
func (s *Scheduler) fire(ctx context.Context, sc Schedule, due time.Time) (Result, bool) {
	defer func() {
		s.mu.Lock()
		s.busy[sc.Name] = false
		s.mu.Unlock()
	}()
	log := s.cfg.Logger.With("schedule", sc.Name, "due", due)
	// The claim is never released: it expires after claimTTL, when no
	// replica would run this due time any more.
	if _, err := s.cfg.Store.AcquireLease(ctx, claimKey(sc.Name, due), s.cfg.Owner, claimTTL); err != nil {
		if !errors.Is(err, checkpoint.ErrLeaseHeld) {
			log.Warn("schedule: cannot claim the due time", "error", err)
		}
		return Result{}, false
	}
	// A store whose leases do not outlive the process (SQLite's are the
	// process's own) forgets claims in a restart: the record says it ran.
	ran, err := s.cfg.Store.Records(ctx, checkpoint.RecordFilter{Kind: RecordKind, Limit: 1,
		Labels: map[string]string{"schedule": sc.Name, "event": EventFired, "due": due.UTC().Format(time.RFC3339)}})
	if err != nil || len(ran) > 0 {
		if err != nil {
			log.Warn("schedule: cannot read the records", "error", err)
		}
		return Result{}, false
	}
	r := Result{Schedule: sc.Name, Due: due.UTC(), Thread: sc.ThreadOf(due)}
	if err := s.record(ctx, EventFired, r); err != nil {
		log.Warn("schedule: cannot record the run's start", "error", err)
	}
	log.Info("schedule: running", "thread", r.Thread)
	s.runTurn(ctx, sc, &r)
	if err := s.record(context.WithoutCancel(ctx), EventEnded, r); err != nil {
		log.Warn("schedule: cannot record the run's outcome", "error", err)
	}
	if sc.WebhookURL != "" {
		if err := s.post(context.WithoutCancel(ctx), sc.WebhookURL, r); err != nil {
			log.Warn("schedule: webhook", "url", sc.WebhookURL, "error", err)
		}
	}
	return r, true
}

// runTurn runs the turn and fills r's outcome.
func (s *Scheduler) runTurn(ctx context.Context, sc Schedule, r *Result) {
	req := agent.TurnRequest{Thread: r.Thread, Input: sc.Input, By: "schedule:" + sc.Name,
		Metadata: map[string]string{"schedule": sc.Name}}
	if sc.AllowedCapabilities != nil {
		req.AllowedCapabilities = slices.Clone(sc.AllowedCapabilities)
	}
	if !sc.Writes {
		off := false
		req.Options = &agent.TurnOptions{WritesEnabled: &off}
	}
	var (
		msg    *state.Message
		status agent.RunStatus
		runErr error
	)
	run := func(ctx context.Context, req agent.TurnRequest) iter.Seq2[agent.Event, error] {
		return s.cfg.Runner.Run(ctx, req)
	}
	if s.cfg.RunFor != nil {
		run = func(ctx context.Context, req agent.TurnRequest) iter.Seq2[agent.Event, error] {
			return s.cfg.RunFor(ctx, sc, req)
		}
	}
	for ev, err := range run(ctx, req) {
		if err != nil {
			runErr = err
			continue
		}
		switch ev.Type {
		case agent.EventMessage:
			msg = ev.Message
		case agent.EventDone:
			status = ev.Status
		}
	}
	if msg != nil {
		r.Message = msg.Content
	}
	switch {
	case runErr != nil && (errors.Is(runErr, context.Canceled) || ctx.Err() != nil):
		r.Outcome, r.Error = OutcomeCanceled, runErr.Error()
	case runErr != nil:
		r.Outcome, r.Error = OutcomeFailed, runErr.Error()
		if errors.Is(runErr, graph.ErrThreadBusy) {
			r.Error = "the thread is busy with an earlier run: " + runErr.Error()
		}
	case status == agent.RunInterrupted:
		r.Outcome = OutcomeWaiting
	case status == agent.RunCanceled:
		r.Outcome = OutcomeCanceled
	case status != agent.RunAnswered:
		r.Outcome = OutcomeFailed
	case msg != nil && msg.Kind == state.KindAnswer:
		r.Outcome = OutcomeAnswered
	default:
		r.Outcome = OutcomeNotAnswered
	}
}

// record appends one record of a run.
func (s *Scheduler) record(ctx context.Context, event string, r Result) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	labels := map[string]string{"schedule": r.Schedule, "event": event, "due": r.Due.Format(time.RFC3339)}
	if r.Outcome != "" {
		labels["outcome"] = r.Outcome
	}
	_, err = s.cfg.Store.AppendRecords(ctx, checkpoint.Record{Kind: RecordKind, Thread: r.Thread, Time: s.cfg.Now(), Labels: labels, Data: data})
	return err
}

// post sends r to url as JSON.
func (s *Scheduler) post(ctx context.Context, url string, r Result) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// Status is a schedule's line in `capgraph schedules`.
type Status struct {
	Name string
	When string
	Next time.Time
	// Last is the latest run's result (Outcome "running" while it runs);
	// nil when it never ran.
	Last *Result
}

// Statuses lists the schedules with their next due time after now and
// their last run, from the store's records.
func Statuses(ctx context.Context, log checkpoint.RecordLog, schedules []Schedule, now time.Time) ([]Status, error) {
	out := make([]Status, 0, len(schedules))
	for _, sc := range schedules {
		st := Status{Name: sc.Name, When: sc.When.String(), Next: sc.When.Next(now)}
		recs, err := log.Records(ctx, checkpoint.RecordFilter{Kind: RecordKind, Labels: map[string]string{"schedule": sc.Name}, Newest: true, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 {
			var r Result
			if err := json.Unmarshal(recs[0].Data, &r); err == nil {
				if recs[0].Labels["event"] == EventFired {
					r.Outcome = "running"
				}
				st.Last = &r
			}
		}
		out = append(out, st)
	}
	return out, nil
}
