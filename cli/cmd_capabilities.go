package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// cmdCapabilities lists the registry: name, provides, requires, the retry
// policy in force (the capability's own, else the configured one, else the
// global default) and whether it asks for approval.
func cmdCapabilities(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[-v]")
	verbose := fs.Bool("v", false, "also print each capability's description")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "capabilities", Problem: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	reg, err := c.registry(ctx)
	if err != nil {
		return err
	}
	cfg := c.cfg
	configured := map[string]capabilities.RetryPolicy{}
	for name := range cfg.Retry.Capabilities {
		configured[name], _ = cfg.RetryPolicyFor(name)
	}
	header := []string{"NAME", "PROVIDES", "REQUIRES", "RETRY", "APPROVAL"}
	var rows [][]string
	var descs []string
	for _, capb := range reg.All() {
		p := capabilities.ResolveRetryPolicy(capb, configured, cfg.Retry.Default)
		src := "default"
		if _, own := capabilities.HasOwnRetryPolicy(capb); own {
			src = "own"
		} else if _, ok := configured[capb.Name()]; ok {
			src = "config"
		}
		rows = append(rows, []string{capb.Name(), list(capb.Provides()), requires(capb.Requires()),
			policyText(p) + " (" + src + ")", approvalText(capb, cfg.Approval.GlobalMode)})
		descs = append(descs, oneLineText(capb.Description()))
	}
	if !*verbose {
		descs = nil
	}
	writeTable(c.env.Stdout, c.env.width(), header, rows, descs)
	c.printMCP(*verbose)
	return nil
}

// writeTable prints rows under header as columns when they fit in width,
// else one block per row with a labelled line per column, wrapped to width
// (a table wider than the terminal would be wrapped by it, unreadably).
// descs, when given, are printed under each row.
func writeTable(w io.Writer, width int, header []string, rows [][]string, descs []string) {
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, cell := range r {
			widths[i] = max(widths[i], displayWidth(cell))
		}
	}
	total := 2 * (len(widths) - 1)
	for _, n := range widths {
		total += n
	}
	if total <= width {
		line := func(r []string) {
			var b strings.Builder
			for i, cell := range r {
				b.WriteString(cell)
				if i < len(r)-1 {
					b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(cell)+2))
				}
			}
			fmt.Fprintln(w, b.String())
		}
		line(header)
		for i, r := range rows {
			line(r)
			if descs != nil {
				for _, l := range wrap(descs[i], width-2) {
					fmt.Fprintln(w, "  "+l)
				}
			}
		}
		return
	}
	label := 0
	for _, h := range header[1:] {
		label = max(label, len(h))
	}
	indent := 2 + label + 2
	for i, r := range rows {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, r[0])
		for j, cell := range r[1:] {
			name := strings.ToLower(header[j+1])
			for k, l := range wrap(cell, width-indent) {
				if k == 0 {
					fmt.Fprintf(w, "  %-*s  %s\n", label, name, l)
				} else {
					fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", indent), l)
				}
			}
		}
		if descs != nil {
			for _, l := range wrap(descs[i], width-2) {
				fmt.Fprintln(w, "  "+l)
			}
		}
	}
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}

func requires(rs []capabilities.Requirement) string {
	if len(rs) == 0 {
		return "-"
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Type
		if r.Cardinality != "" && r.Cardinality != capabilities.Single {
			out[i] += "(" + string(r.Cardinality) + ")"
		}
	}
	return strings.Join(out, ",")
}

// policyText renders a retry policy briefly: "3 attempts, 1s ×2 ≤30s, full jitter".
func policyText(p capabilities.RetryPolicy) string {
	p = p.WithDefaults()
	if p.MaxAttempts <= 1 {
		return "no retry"
	}
	s := fmt.Sprintf("%d attempts, %s ×%g ≤%s, %s jitter", p.MaxAttempts, dur(time.Duration(p.InitialInterval)), p.BackoffCoefficient, dur(time.Duration(p.MaxInterval)), p.Jitter)
	if p.MaxElapsed > 0 {
		s += ", within " + dur(time.Duration(p.MaxElapsed))
	}
	if len(p.NonRetryable) > 0 {
		s += ", never " + strings.Join(p.NonRetryable, "/")
	}
	return s
}

func dur(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "m") || strings.HasSuffix(s, "h") {
		return s
	}
	if s == "" {
		return "0s"
	}
	return d.String()
}

// approvalText says whether a step of c waits for a human: always for a
// capability with side effects, else as the configured global mode says. In selective mode that is the capability's own
// decision, asked here for an empty step with writes enabled (a capability
// that decides from the step's arguments may still ask for some steps).
func approvalText(c capabilities.Capability, mode string) string {
	if capabilities.HasSideEffects(c) {
		return "always (side effects)" // whatever the mode: docs/safety.md
	}
	switch mode {
	case "disabled":
		return "no (approval disabled)"
	case "all_capabilities":
		return "yes (all capabilities)"
	}
	if asksApproval(c) {
		return "yes"
	}
	return "no"
}

func asksApproval(c capabilities.Capability) (yes bool) {
	ar, ok := c.(capabilities.ApprovalRequirer)
	if !ok {
		return false
	}
	// An application's RequiresApproval may not expect an empty step; a
	// panic there must not take the listing down.
	defer func() {
		if recover() != nil {
			yes = true
		}
	}()
	yes, _ = ar.RequiresApproval(capabilities.Step{WritesEnabled: true})
	return yes
}
