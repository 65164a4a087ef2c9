package killtest

import "strings"

// Report collects what a child printed in one round: "ACK thread step id"
// (an acknowledged checkpoint), "DONE thread" (the thread's run ended), and
// "KIND thread" lines for the pending kinds the test names (e.g. WAIT: a
// durable wait began), which stay pending for a thread until its next ACK.
// Any other line is an error the child reported.
type Report struct {
	Round int
	Acks  []Ack
	Done  []string
	Errs  []string

	pending map[string]map[string]bool // kind → threads
}

// NewReport reads the lines of round, accepting the pending kinds.
func NewReport(round int, kinds ...string) *Report {
	r := &Report{Round: round, pending: map[string]map[string]bool{}}
	for _, k := range kinds {
		r.pending[k] = map[string]bool{}
	}
	return r
}

// Line records one line; it reports whether the line acknowledged a
// checkpoint (the trigger of a kill).
func (r *Report) Line(line string) bool {
	if a, ok, err := ParseAck(line, r.Round); ok {
		if err != nil {
			r.Errs = append(r.Errs, err.Error())
			return false
		}
		r.Acks = append(r.Acks, a)
		for _, threads := range r.pending {
			delete(threads, a.Thread)
		}
		return true
	}
	f := strings.Fields(line)
	switch {
	case len(f) == 2 && f[0] == "DONE":
		r.Done = append(r.Done, f[1])
	case len(f) == 2 && r.pending[f[0]] != nil:
		r.pending[f[0]][f[1]] = true
	default:
		r.Errs = append(r.Errs, line)
	}
	return false
}

// Pending reports whether some thread has a line of kind not yet followed by
// an ACK.
func (r *Report) Pending(kind string) bool { return len(r.pending[kind]) > 0 }
