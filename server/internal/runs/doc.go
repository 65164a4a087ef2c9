// Package runs runs the server's runs in one process: a Manager admits a
// run (its principal's and the process's run limits, one run per thread),
// starts its agent call on its own goroutine (a crew that Shutdown joins),
// keeps its bounded event log that streams follow and reconnect to
// (Run.Follow), counts the requests following it (Run.Join, Run.Leave),
// and ends it once. Every move of a run is one of its lifecycle's
// (package server/internal/run).
//
// What the manager needs from the server is passed in Deps: its limits and
// clock, and Hooks for the server's parts of an agent call — Begin (the
// replicas' lease and publisher, and an Observer that audits the events and
// renders them for the run's record), Park, Settle (the run's record
// written: with replicas before anyone sees the run end; on one process
// just after, the thread's next run and Run.Settled waiting for it —
// Manager.endThenSettle), ThreadFreed and HandedBack. The server's part
// of a run (its owner, its protocol's rendering) is Run.Ext.
package runs
