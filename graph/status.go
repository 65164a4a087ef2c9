package graph

import "github.com/capgraph/capgraph/graph/checkpoint"

// StatusOf derives the status of a checkpoint tuple: interrupted when it holds
// interrupt writes, done when nothing is next, failed when it holds an error
// write, otherwise canceled (a run that stopped or crashed between steps).
func StatusOf(t checkpoint.Tuple) Status {
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteInterrupt {
			return StatusInterrupted
		}
	}
	if len(t.Checkpoint.Next) == 0 {
		return StatusDone
	}
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteError {
			return StatusFailed
		}
	}
	return StatusCanceled
}

// Interrupts decodes the pending interrupts of a checkpoint tuple.
func Interrupts(t checkpoint.Tuple) []*InterruptError {
	var out []*InterruptError
	for _, w := range t.Writes {
		if w.Kind == checkpoint.WriteInterrupt {
			out = append(out, &InterruptError{Node: w.Task, Payload: w.Value})
		}
	}
	return out
}
