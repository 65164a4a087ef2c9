package telemetry

import (
	"context"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/logging"
)

// Logs returns an observer writing one structured line per significant
// event of a run (start and end, each node and plan step, a failure and
// what recovery it gets, a retry, an approval asked for, a side effect, a
// refused capability, an error report and its cause) through logger. A
// node pausing the run for an approval is logged at info ("node
// interrupted"), not as a failure. Every
// line carries thread, run (the caller's id of the run when it named one,
// as the server and its audit records do; the engine's id is then
// graph_run) and, when the run is traced, trace_id; a line
// about a node or step adds node, step, capability, attempt and severity
// where they apply. Lines at info and warn carry identifiers, names, kinds
// and numbers only: error texts, which may quote the user or a remote
// system, and model names are at debug.
func Logs(logger logging.Logger) agent.Observer {
	if logger == nil {
		return nil
	}
	return logObserver{logger}
}

type logObserver struct{ l logging.Logger }

func (o logObserver) StartRun(_ context.Context, info agent.RunInfo) agent.RunObserver {
	kv := []any{"thread", info.Thread}
	tc := info.Trace
	if tc.TraceParent == "" {
		tc = info.Parent
	}
	if id := TraceID(tc); id != "" {
		kv = append(kv, "trace_id", id)
	}
	if info.Run != "" {
		kv = append(kv, "run", info.Run)
	}
	return &logRun{l: o.l.With(kv...), resume: info.Resume, answer: info.Answer != nil, named: info.Run != ""}
}

type logRun struct {
	l      logging.Logger
	run    string // the engine's run id, once seen
	named  bool   // the caller named the run (RunInfo.Run)
	resume bool
	answer bool
}

func (r *logRun) TraceContext() agent.TraceContext { return agent.TraceContext{} }
func (r *logRun) End()                             {}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// where lists the fields that place e: node, and step, capability and
// attempt for a plan step.
func where(e agent.Event) []any {
	kv := make([]any, 0, 10)
	if e.Node != "" {
		kv = append(kv, "node", e.Node)
	}
	if e.Capability != "" && e.Step >= 0 {
		kv = append(kv, "step", e.Step, "capability", e.Capability)
	}
	if e.Attempt > 0 {
		kv = append(kv, "attempt", e.Attempt)
	}
	return kv
}

func (r *logRun) Event(e agent.Event) {
	if r.run == "" && e.RunID != "" {
		r.run = e.RunID
		key := "run"
		if r.named {
			key = "graph_run"
		}
		r.l = r.l.With(key, e.RunID)
	}
	l := r.l
	switch e.Type {
	case agent.EventRunStart:
		kv := []any{"resume", r.resume}
		if r.answer {
			kv = append(kv, "answers_approval", true)
		}
		l.Info("run started", kv...)
	case agent.EventNodeEnd:
		kv := append(where(e), "duration_ms", ms(e.Duration))
		if Interrupted(e) {
			// Waiting for a human is normal operation: no warning to alert on.
			l.Info("node interrupted", kv...)
			return
		}
		if e.Err != "" {
			l.Warn("node failed", kv...)
			l.Debug("node failed: error", append(where(e), "error", e.Err)...)
			return
		}
		l.Info("node ended", kv...)
	case agent.EventStepEnd:
		kv := append(where(e), "duration_ms", ms(e.Duration))
		if e.Err != "" {
			l.Warn("step failed", kv...)
			l.Debug("step failed: error", append(where(e), "error", e.Err)...)
			return
		}
		l.Info("step ended", kv...)
	case agent.EventFailure:
		f := detail(e).Failure
		kv := append(where(e), "severity", f.Severity, "kind", f.Kind, "action", f.Action)
		if f.Limit != "" {
			kv = append(kv, "limit", f.Limit)
		}
		l.Warn("attempt failed", kv...)
		if e.Err != "" {
			l.Debug("attempt failed: error", append(where(e), "error", e.Err)...)
		}
	case agent.EventRetry:
		ri := e.Retry
		kv := append(where(e), "attempt", ri.Attempt, "max_attempts", ri.Max, "delay_ms", ms(ri.Delay), "severity", "retriable")
		l.Warn("retry scheduled", kv...)
	case agent.EventErrorCause:
		kv := []any{"node", e.Node, "cause", e.Text}
		if f := detail(e).Failure; f.Severity != "" {
			kv = append(kv, "severity", f.Severity)
		}
		if f := detail(e).Failure; f.Limit != "" {
			kv = append(kv, "limit", f.Limit)
		}
		l.Warn("error report", kv...)
	case agent.EventApprovalRequired:
		kv := where(e)
		if ap := e.Approval; ap != nil {
			kv = append(kv, "approval", ap.ID, "approval_kind", string(ap.Kind))
			if ap.Capability != "" {
				kv = append(kv, "capability", ap.Capability)
			}
		}
		l.Info("approval required", kv...)
	case agent.EventAudit:
		a := e.Audit
		kv := append(where(e), "capability", a.Capability, "event", a.Event)
		if a.Outcome != "" {
			kv = append(kv, "outcome", string(a.Outcome))
		}
		if a.Reason != "" {
			kv = append(kv, "reason", a.Reason)
		}
		msg := "side effect " + a.Event
		if a.Outcome != "" {
			msg += ": " + string(a.Outcome)
		}
		switch a.Outcome {
		case capabilities.OutcomeMismatch, capabilities.OutcomeUnconfirmed:
			l.Error(msg, kv...)
		case capabilities.OutcomeRefused, capabilities.OutcomeFailed, capabilities.OutcomeUnrequested:
			l.Warn(msg, kv...)
		default:
			l.Info(msg, kv...)
		}
	case agent.EventDenied:
		l.Warn("capability refused to this caller", where(e)...)
	case agent.EventModelCall:
		c := e.Call
		kv := append(where(e), "role", c.Role, "duration_ms", ms(e.Duration), "prompt_tokens", c.Usage.PromptTokens, "completion_tokens", c.Usage.CompletionTokens)
		if e.Err != "" {
			l.Warn("model call failed", kv...)
			l.Debug("model call failed: error", "role", c.Role, "model", c.Model, "error", e.Err)
			return
		}
		l.Debug("model call", append(kv, "model", c.Model)...)
	case agent.EventDone:
		kv := []any{"status", string(e.Status)}
		switch e.Status {
		case agent.RunFailed:
			l.Error("run ended", kv...)
			l.Debug("run ended: error", "error", e.Err)
		case agent.RunCanceled:
			l.Warn("run ended", kv...)
		default:
			l.Info("run ended", kv...)
		}
	}
}

// TraceID returns the trace id of a W3C traceparent
// ("00-<trace id>-<span id>-<flags>"), or "" when it is not one.
func TraceID(tc agent.TraceContext) string {
	tp := tc.TraceParent
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' {
		return ""
	}
	id := tp[3:35]
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	if id == "00000000000000000000000000000000" {
		return ""
	}
	return id
}

// detail is what an observer-only event carries (none: zero).
func detail(e agent.Event) agent.Detail {
	if e.Detail != nil {
		return *e.Detail
	}
	return agent.Detail{}
}
