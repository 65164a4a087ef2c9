// Package run is the lifecycle of a server run: one execution of a turn, of
// an approval's answer or of a resume on a thread, from the request that
// asked for it to its end. Everything the server does with a run is one of
// the moves below; the table (transitions, lifecycle.go) is the only place
// they are written, and a move it does not have is refused.
//
// # Two halves: the record and the run
//
// A run has a durable half and a live half. The durable half is its record
// in the store beside the checkpoints (runstore.Record), written
// before the server acknowledges anything (a 202, a stream's first byte):
// what to run (the user's input, the answer, who asked) and where it
// stands,
//
//	queued ──► running ──► done | failed | interrupted | canceled
//	   ▲          │
//	   └──────────┘ requeued (replicas: a retry's wait, a shutdown, a lease
//	                given back), with a not-before time
//
// The live half is the run in one process: its agent call, its event log
// that streams follow and reconnect to, the requests that follow it. Its
// states (State) and moves (Trigger):
//
//	from                                 trigger    to
//	None                                 Accept     Accepted
//	None                                 Mirror     Following
//	Accepted                             Abandon    Forgotten
//	Accepted                             Launch     Running
//	Running                              LoseLease  Fenced
//	Running                              Park       Parked
//	Running                              Requeue    Following
//	Running                              HandBack   Following
//	Parked                               Resume     Running
//	Running, Fenced, Parked, Following   End        Finished
//	Finished                             Forget     Forgotten
//
// The usual life is None → Accepted → Running → Finished → Forgotten; a
// retry's long wait adds Running → Parked → Running (one process) or
// Running → Following (replicas); the shutdown, a cancel request or a
// client that left ends it from wherever it stands (a client that left at
// once, or, when it can repeat the request — an Idempotency-Key, a
// retrying SDK — after DetachGrace with no repeat back).
//
//   - Accepted: admitted — the owner's run limits counted, the thread
//     taken (one run per thread in a process), the record being written.
//     A repeat of the request that finds the first one's record, or a
//     record that cannot be written, abandons it: it never started.
//   - Running: its agent call goes on in a goroutine of this process,
//     detached from the request (the request follows its log). With
//     replicas it holds the record's lease, renewed every TTL/3.
//   - Fenced: running, but a renewal was refused — another replica took
//     the run. It stops at its next checkpoint and writes nothing more
//     (the store refuses its checkpoints, ErrLeaseLost).
//   - Parked: its call ended because a retry waits longer than ParkAfter.
//     No goroutine waits: one process sets a timer; when due the run's own
//     record is taken over like any other (below), and the same run — its
//     id, its log, its followers — goes on (Resume). Canceled while parked
//     (its client left, a cancel request, the shutdown), it ends at once.
//   - Following: another replica runs it, or the queue holds it until one
//     does (a retry's wait with replicas, Requeue; a recovered run that
//     found its thread held elsewhere, HandBack): this process follows its
//     events in the store, so its clients keep following it here. A mirror
//     of a run started elsewhere begins here (Mirror).
//   - Finished: it ended, once — answered, interrupted (waiting for a
//     human), failed or canceled, or stopped by the shutdown (its record
//     then stays unfinished for the next start), or, followed, its record
//     ended. Its log stays for reconnecting clients until it is evicted.
//     On one process its record's end is written just after it finishes
//     (its clients do not wait for that commit); until then the thread's
//     next run and a repeat of its request wait for it, and a crash leaves
//     a running record whose thread says the turn ended (taken over
//     below: "the record says so").
//
// The promises, tested over random sequences of triggers: an agent call
// starts only when none goes on (a run is never executed twice at once);
// a run ends once; it is never forgotten before it ends (or before it
// started); from every state it can still end. The server's Shutdown
// waits for every run Accepted, Running, Fenced or Parked in the process
// to end, then joins the goroutines of their calls and its own.
//
// # One way back: taking a record over
//
// Whatever cut a run — a crash, a shutdown, a dead replica, a retry's
// wait, the run it was queued behind — it starts again one way: its record
// is taken over (Server.takeOver in server/recover.go: endOvertaken,
// recoveredWork, claimRecord, then submit). Who takes it:
//
//   - one process (SQLite, memory): RecoverRuns lists the unfinished
//     records no run of the process holds (at start-up, and every
//     RecoverEvery); the end of a run starts the answers queued behind it;
//     a parked run's timer takes its own record;
//   - replicas (PostgreSQL): each replica claims ready records from the
//     queue (ClaimRun: queued and due, or running with an expired lease)
//     when it has room, woken by a signal or every TTL/3.
//
// Taking over reads the record's input and the thread's checkpoint and
// does exactly one thing:
//
//	the record's input                    the thread           then
//	a turn that never reached the store   —                    the turn runs from its input
//	a turn, or a resume                   between two steps    it resumes there
//	an answer                             between two steps,   the answer is carried out
//	                                      or still asking      (never a resume without it)
//	an answer queued behind a run         that run canceled    failed: "answer again"
//	anything, a later turn recorded       —                    failed: replaced
//	a turn                                answered             done, with the answer
//	anything                              interrupted / failed the record says so
//
// A run cut between two steps that has no record (a terminal's run, say)
// is claimed by the agent (agent.ClaimUnfinished), recorded, and started
// the same way.
//
// # Approvals are not a state
//
// A run that asks a human for approval ends: Finished, its record
// interrupted, its thread's checkpoint holding the pending approval. No
// goroutine, stream or lease waits for the answer. The answer is a new
// run (an answer's record, written before the answer is acknowledged),
// which carries the decision out.
//
// So: a replica that dies while a run waits for approval loses nothing —
// the run had ended; its record says interrupted; the approval waits in
// the checkpoint, and any replica answers it. A replica that dies while it
// carries an answer out leaves the answer's record running with a lease
// that expires; another replica claims it within the TTL and takes it
// over: the checkpoint says whether the agent took the answer (it is
// stored with the checkpoint, in one transaction); either way the answer
// is carried out once, never resumed without it and never asked again.
// A side effect the dead replica had started and not confirmed is
// reconciled by the agent (a read-back), not repeated (docs/safety.md).
//
// # Goroutines
//
// The run's agent call runs in a goroutine of the server's run crew; its
// lease renewal, the publisher of its events (replicas) and the follower
// of a run in the store run in the server's background crew, with the
// claim, listen, recovery and prune loops, the starts of queued answers
// and the bodies of timers. Shutdown stops and joins both.
package run
