package cli

import (
	"context"
	"fmt"

	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/schedule"
	"github.com/capgraph/capgraph/wiring"
)

// cmdSchedules lists the configuration's schedules: when, the next due
// time, and the last run's outcome from the store.
func cmdSchedules(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "schedules", Problem: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	list, err := wiring.Schedules(cfg, nil)
	if err != nil {
		return err
	}
	w := c.env.Stdout
	if len(list) == 0 {
		fmt.Fprintln(w, "no schedules (add them under schedules: in the configuration; docs/schedules.md)")
		return nil
	}
	st, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	rl, ok := st.(checkpoint.RecordLog)
	if !ok {
		return fmt.Errorf("the store %s keeps no records", c.spec)
	}
	statuses, err := schedule.Statuses(ctx, rl, list, c.env.Now())
	if err != nil {
		return err
	}
	const layout = "2006-01-02 15:04 MST"
	for i, s := range statuses {
		if i > 0 {
			fmt.Fprintln(w)
		}
		loc := list[i].When.Location()
		fmt.Fprintln(w, s.Name)
		fmt.Fprintf(w, "  when  %s\n", s.When)
		fmt.Fprintf(w, "  next  %s\n", s.Next.In(loc).Format(layout))
		switch l := s.Last; {
		case l == nil:
			fmt.Fprintln(w, "  last  never ran")
		default:
			fmt.Fprintf(w, "  last  %s (due %s, thread %s)\n", l.Outcome, l.Due.In(loc).Format(layout), l.Thread)
			if l.Error != "" {
				fmt.Fprintf(w, "        %s\n", oneLineText(l.Error))
			}
		}
	}
	return nil
}
