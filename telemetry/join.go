package telemetry

import (
	"context"

	"github.com/capgraph/capgraph/agent"
)

// Join returns an observer that hands every run to each of obs in order
// (nil ones are skipped); nil when none is left. The trace context of the
// first observer that traces the run is passed on to the others in
// RunInfo.Trace, so that a log line carries the run's trace id.
func Join(obs ...agent.Observer) agent.Observer {
	var out joined
	for _, o := range obs {
		if o != nil {
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type joined []agent.Observer

func (j joined) StartRun(ctx context.Context, info agent.RunInfo) agent.RunObserver {
	runs := make(joinedRun, len(j))
	for i, o := range j {
		runs[i] = o.StartRun(ctx, info)
		if info.Trace.TraceParent == "" {
			info.Trace = runs[i].TraceContext()
		}
	}
	return runs
}

type joinedRun []agent.RunObserver

func (r joinedRun) Event(e agent.Event) {
	for _, o := range r {
		o.Event(e)
	}
}

func (r joinedRun) TraceContext() agent.TraceContext {
	for _, o := range r {
		if tc := o.TraceContext(); tc.TraceParent != "" {
			return tc
		}
	}
	return agent.TraceContext{}
}

func (r joinedRun) End() {
	for _, o := range r {
		o.End()
	}
}
