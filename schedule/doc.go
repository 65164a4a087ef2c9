// Package schedule runs the configuration's schedules: at each due time of
// a cron expression (package spec) a turn starts with the schedule's
// input, on a new thread or one kept thread, with only the capabilities
// the schedule allows and writes off unless it says otherwise (then the
// approval policy applies: a write waits for a human). Replicas sharing a
// store run each due time once: the first to claim it (a lease on the
// store, never released, expiring once no replica would run that due
// time) runs it. Each run leaves a fired and an ended record in the
// store's record log — what `capgraph schedules` shows — and its outcome
// may be posted to a webhook. `capgraph serve` starts the scheduler
// (docs/schedules.md).
package schedule
