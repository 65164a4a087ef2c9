package checkpointtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// BenchLease measures what a run pays for its lease: one AcquireLease and one
// ReleaseLease of a thread (a new thread each time, as a server sees), and a
// RenewLease, reported as acquire-, renew- and release- p50/p99 latencies.
func BenchLease(b *testing.B, l checkpoint.Leaser) {
	ctx := context.Background()
	var acq, ren, rel Latencies
	for i := 0; b.Loop(); i++ {
		thread := fmt.Sprintf("bench-lease-%d", i)
		var (
			ls  checkpoint.Lease
			err error
		)
		acq.Time(func() { ls, err = l.AcquireLease(ctx, thread, "bench", time.Minute) })
		if err != nil {
			b.Fatal(err)
		}
		ren.Time(func() { ls, err = l.RenewLease(ctx, ls, time.Minute) })
		if err != nil {
			b.Fatal(err)
		}
		rel.Time(func() { err = l.ReleaseLease(ctx, ls) })
		if err != nil {
			b.Fatal(err)
		}
	}
	acq.ReportAs(b, "acquire-")
	ren.ReportAs(b, "renew-")
	rel.ReportAs(b, "release-")
}

// BenchFencedPut is BenchPut with the thread's lease in the ctx, so each Put
// also checks the lease (checkpoint.WithLease); compare with BenchPut.
func BenchFencedPut(b *testing.B, s checkpoint.Store) {
	l, ok := s.(checkpoint.Leaser)
	if !ok {
		b.Fatalf("%T is no checkpoint.Leaser", s)
	}
	ctx := context.Background()
	ls, err := l.AcquireLease(ctx, "bench-fenced", "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	ctx = checkpoint.WithLease(ctx, ls)
	parent := uuid.Nil
	var lat Latencies
	b.SetBytes(int64(len(BenchState)))
	for i := 0; b.Loop(); i++ {
		cp := checkpoint.Checkpoint{ThreadID: "bench-fenced", ID: uuid.Must(uuid.NewV7()), ParentID: parent, Step: i,
			State: BenchState, Next: []string{"n"}, Created: time.Now()}
		lat.Time(func() { err = s.Put(ctx, cp) })
		if err != nil {
			b.Fatal(err)
		}
		parent = cp.ID
	}
	lat.Report(b)
}

// BenchClaim measures Claimer.ClaimResumable picking one cut run among
// done threads (done finished threads, 20 cut ones), then releasing it:
// what RecoverRuns pays per thread it resumes, before the run itself.
func BenchClaim(b *testing.B, s checkpoint.Store, done int) {
	c, ok := s.(checkpoint.Claimer)
	l, _ := s.(checkpoint.Leaser)
	if !ok || l == nil {
		b.Fatalf("%T is no checkpoint.Claimer", s)
	}
	ctx := context.Background()
	for i := range done + 20 {
		cp := checkpoint.Checkpoint{ThreadID: fmt.Sprintf("bench-claim-%05d", i), ID: uuid.Must(uuid.NewV7()),
			State: BenchState, Created: time.Now()}
		if i >= done {
			cp.Next = []string{"n"}
		}
		if err := s.Put(ctx, cp); err != nil {
			b.Fatal(err)
		}
	}
	var claim Latencies
	for b.Loop() {
		var (
			ls  []checkpoint.Lease
			err error
		)
		claim.Time(func() { ls, err = c.ClaimResumable(ctx, "bench", time.Minute, checkpoint.ClaimOptions{Limit: 1}) })
		if err != nil || len(ls) != 1 {
			b.Fatalf("ClaimResumable = %v, %v; want one lease", ls, err)
		}
		if err := l.ReleaseLease(ctx, ls[0]); err != nil {
			b.Fatal(err)
		}
	}
	claim.ReportAs(b, "claim-")
}
