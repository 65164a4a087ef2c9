package run

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// Every move of the table, and a few it must not have.
func TestTransitions(t *testing.T) {
	for _, tc := range []struct {
		from State
		on   Trigger
		to   State // None: refused
	}{
		{None, Accept, Accepted},
		{None, Mirror, Following},
		{None, End, None},
		{Accepted, Launch, Running},
		{Accepted, Abandon, Forgotten},
		{Accepted, End, None}, // an accepted run that never started is abandoned, not ended
		{Running, LoseLease, Fenced},
		{Running, Park, Parked},
		{Running, Requeue, Following},
		{Running, HandBack, Following},
		{Running, End, Finished},
		{Running, Launch, None}, // never executed twice
		{Fenced, End, Finished},
		{Fenced, Park, None},
		{Parked, Resume, Running},
		{Parked, End, Finished},
		{Parked, Launch, None},
		{Following, End, Finished},
		{Following, Resume, None}, // the queue resumes it, wherever: a new run of the record
		{Finished, Forget, Forgotten},
		{Finished, End, None}, // ends once
		{Finished, Resume, None},
		{Forgotten, Forget, None},
		{Running, Forget, None}, // never forgotten before its end
	} {
		got, ok := Next(tc.from, tc.on)
		if ok != (tc.to != None) || ok && got != tc.to {
			t.Errorf("%s --%s--> %s (%v); want %s", tc.from, tc.on, got, ok, tc.to)
		}
		m := Machine{state: tc.from}
		err := m.Fire(tc.on)
		var te *TransitionError
		if ok != (err == nil) || !ok && (!errors.As(err, &te) || m.State() != tc.from) {
			t.Errorf("Fire %s from %s: %v, now %s", tc.on, tc.from, err, m.State())
		}
	}
}

// The lifecycle's promises, over random sequences of triggers (most of
// them refused, as racing events are): a run is never executed twice (its
// agent call starts only when none goes on), it ends once, it is never
// forgotten before its end (or before it started), and from wherever it
// stands it can still end.
func TestLifecycleProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	canEnd := endable()
	for range 20000 {
		var m Machine
		executing, ends, calls := false, 0, 0
		for range 1 + rng.IntN(24) {
			before := m.State()
			on := Trigger(rng.IntN(int(numTriggers)))
			if err := m.Fire(on); err != nil {
				if m.State() != before {
					t.Fatalf("a refused %s moved the run from %s to %s", on, before, m.State())
				}
				continue
			}
			after := m.State()
			if !m.Saw(on) {
				t.Fatalf("%s fired but not seen", on)
			}
			switch {
			case after == Running && before != Running:
				if executing {
					t.Fatalf("%s started a second agent call while one goes on", on)
				}
				executing = true
				calls++
			case before == Running && after != Fenced, before == Fenced:
				executing = false
			}
			if after == Finished {
				ends++
				if ends > 1 {
					t.Fatalf("ended twice")
				}
			}
			if after == Forgotten && before != Finished && before != Accepted {
				t.Fatalf("forgotten from %s, before its end", before)
			}
			if before == Accepted && after == Forgotten && calls > 0 {
				t.Fatal("abandoned after it ran")
			}
			if !after.Ended() && !canEnd[after] {
				t.Fatalf("from %s the run can never end", after)
			}
		}
	}
}

// endable is the states from which Finished can still be reached.
func endable() map[State]bool {
	out := map[State]bool{Finished: true, Forgotten: true}
	for changed := true; changed; {
		changed = false
		for s := range numStates {
			for on := range numTriggers {
				if to, ok := Next(s, on); ok && out[to] && !out[s] && (to != Forgotten || s != Accepted) {
					out[s], changed = true, true
				}
			}
		}
	}
	return out
}
