package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// cmdAudit lists the audit records of side-effecting steps from the store.
func cmdAudit(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--thread ID] [--since T] [--until T] [--event E] [--outcome O] [--principal P] [--tenant T] [--limit N] [--json]")
	thread := fs.String("thread", "", "only this thread (the internal id the records show)")
	since := fs.String("since", "", "only records at or after T: an RFC 3339 time, a date (2026-05-01) or a duration before now (24h)")
	until := fs.String("until", "", "only records before T (same forms as --since)")
	event := fs.String("event", "", "only this event: "+strings.Join(agent.AuditEvents, ", "))
	outcome := fs.String("outcome", "", "only this outcome: "+outcomeList())
	principal := fs.String("principal", "", "only this API key's records")
	tenant := fs.String("tenant", "", "only this tenant's records")
	limit := fs.Int("limit", 50, "at most the newest N records (0: all)")
	asJSON := fs.Bool("json", false, "one JSON object per line instead of text")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "audit", Problem: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *event != "" && !slices.Contains(agent.AuditEvents, *event) {
		return &UsageError{Command: "audit", Problem: fmt.Sprintf("--event %q: want one of %s", *event, strings.Join(agent.AuditEvents, ", "))}
	}
	if *outcome != "" && !capabilities.Outcome(*outcome).Valid() {
		return &UsageError{Command: "audit", Problem: fmt.Sprintf("--outcome %q: want one of %s", *outcome, outcomeList())}
	}
	if *limit < 0 {
		return &UsageError{Command: "audit", Problem: "--limit must not be negative"}
	}
	f := agent.AuditFilter{Thread: *thread, Event: *event, Outcome: *outcome, Principal: *principal, Tenant: *tenant, Limit: *limit}
	now := c.env.Now()
	for flag, v := range map[string]struct {
		s   string
		dst *time.Time
	}{"--since": {*since, &f.Since}, "--until": {*until, &f.Until}} {
		if v.s == "" {
			continue
		}
		t, err := agent.ParseAuditTime(v.s, now)
		if err != nil {
			return &UsageError{Command: "audit", Problem: flag + ": " + strings.TrimPrefix(err.Error(), agent.ErrBadRequest.Error()+": ")}
		}
		*v.dst = t
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	rl, ok := st.(checkpoint.RecordLog)
	if !ok {
		return fmt.Errorf("the store %s keeps no audit records", c.spec)
	}
	recs, err := agent.ListAudit(ctx, rl, f)
	if err != nil {
		return err
	}
	w := c.env.Stdout
	if *asJSON {
		enc := json.NewEncoder(w)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(recs) == 0 {
		fmt.Fprintln(c.env.Stderr, "no audit records match")
		return nil
	}
	// A terminal gets each record as a block fitted to its width; a pipe
	// or file one line per record, for grep.
	term, width := *c.env.Terminal, c.env.width()
	for _, r := range recs {
		if !term {
			fmt.Fprintln(w, strings.Join(auditParts(r), "  "))
			continue
		}
		for i, part := range auditParts(r) {
			indent, more := "", "    " // a part's lines, then its wrapped rest
			if i > 0 {
				indent, more = "    ", "      "
			}
			if displayWidth(part) <= width-len(indent) {
				fmt.Fprintln(w, indent+part) // as is: the columns' spacing kept
				continue
			}
			for j, l := range wrap(part, width-len(more)) {
				if j == 0 {
					fmt.Fprintln(w, indent+l)
				} else {
					fmt.Fprintln(w, more+l)
				}
			}
		}
	}
	return nil
}

func outcomeList() string {
	s := make([]string, len(capabilities.Outcomes))
	for i, o := range capabilities.Outcomes {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// auditParts is one record in parts: when, what became of it, what it was;
// where; who; the approval; and why or with what result.
func auditParts(r agent.AuditEntry) []string {
	what := r.Event
	if r.Outcome != "" && string(r.Outcome) != r.Event {
		what += " " + strings.ToUpper(string(r.Outcome))
	}
	head := fmt.Sprintf("%s  %-8s  %s", r.Time.UTC().Format(time.RFC3339), what, r.Capability)
	if r.Summary != "" {
		head += ": " + r.Summary
	}
	where := fmt.Sprintf("[thread %s turn %d step %d", r.Thread, r.Turn, r.Step+1)
	if r.Attempt > 0 { // planned and unrequested records are of no attempt
		where += fmt.Sprintf(" attempt %d", r.Attempt)
	}
	if r.Run != "" {
		where += " run " + r.Run
	}
	parts := []string{head, where + "]"}
	if r.Principal != "" || r.Tenant != "" {
		parts = append(parts, fmt.Sprintf("by key %s (tenant %s)", r.Principal, r.Tenant))
	}
	if r.ApprovalID != "" {
		a := "approval " + r.ApprovalID
		if r.ApprovedBy != "" {
			a += " by " + r.ApprovedBy
		}
		if r.Rule != "" {
			a += " (" + r.Rule
			if r.Answer != "" {
				a += fmt.Sprintf(": %q", r.Answer)
			}
			a += ")"
		}
		parts = append(parts, a)
	}
	if s := readings("before", r.Before); s != "" {
		parts = append(parts, s)
	}
	if s := readings("readback", r.Readback); s != "" {
		if r.Reconciled {
			s += " (reconciled after an interruption)"
		}
		parts = append(parts, s)
	}
	var outcome string
	switch {
	case r.ResultSummary != "":
		outcome = "→ " + r.ResultSummary
	case r.Message != "":
		outcome = "— " + r.Message
	}
	if r.Reason != "" {
		outcome = strings.TrimSpace(outcome + " (" + r.Reason + ")")
	}
	if outcome != "" {
		parts = append(parts, outcome)
	}
	return parts
}

// readings is "label: target value unit; …", or "" for none.
func readings(label string, rs []capabilities.Reading) string {
	if len(rs) == 0 {
		return ""
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strings.TrimSpace(fmt.Sprintf("%s %v %s", r.Target, r.Value, r.Unit))
	}
	return label + ": " + strings.Join(parts, "; ")
}
