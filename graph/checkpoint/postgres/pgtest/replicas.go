package pgtest

import (
	"testing"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
)

// LeasingStore is a store that grants thread leases (memory and postgres do).
type LeasingStore interface {
	checkpoint.Store
	checkpoint.Leaser
}

// Backend opens two handles on one shared store, as two replicas hold it.
type Backend struct {
	Name string
	Open func(t *testing.T) (LeasingStore, LeasingStore)
}

// ReplicaBackends are the shared stores replica tests run on: one memory
// store twice (agents of one process), and two connection pools on one
// PostgreSQL schema (two processes; without a database the postgres case
// skips, or fails under CI=true, as DSN says).
func ReplicaBackends() []Backend {
	return []Backend{
		{"memory", func(t *testing.T) (LeasingStore, LeasingStore) { s := memory.New(); return s, s }},
		{"postgres", func(t *testing.T) (LeasingStore, LeasingStore) {
			r := Replicas(t, 2)
			return r[0], r[1]
		}},
	}
}
