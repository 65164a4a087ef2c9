// Package plant is the demo application's simulated accelerator and the
// capabilities that operate it: channel_finding (natural language → channel
// names, reading operators' abbreviations and typos; when nothing matches, a
// successful result saying what does not exist and what does, which the
// steps after it pass on as "nothing was read"), channel_read, archiver_retrieval (time range → series with summary
// statistics) and channel_write (approval, limits, readback verification).
//
// The simulator runs in-process and is deterministic: a channel's value at a
// time is a pure function of the seed, the channel and the time (nominal
// value or last setpoint, a slow drift and hash-based noise), so the archive
// of past values needs no storage and tests can assert exact numbers.
// Transient faults (timeouts, a disconnected archiver) can be injected to
// exercise the agent's retries and error handling.
//
// demo.go lists the demo questions with the facts a correct answer contains.
package plant
