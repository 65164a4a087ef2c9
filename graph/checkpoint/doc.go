// Package checkpoint defines the Store that the graph engine writes after every
// step, and the records it stores: checkpoints (state + next nodes) and pending
// writes (results of concurrent branches that finished before their step did,
// errors, interrupts and resume values).
//
// Implementations live in sub-packages: memory (in-process), sqlite (the
// embedded default) and postgres (several replicas). Every implementation runs
// the conformance suite in checkpointtest.
package checkpoint
