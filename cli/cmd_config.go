package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/capgraph/capgraph/config"
)

// ErrConfigProblems: config check found problems (they are printed).
var ErrConfigProblems = errors.New("the configuration has problems")

// cmdConfig is `config check [FILE]`.
func cmdConfig(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("check [FILE]")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "check" {
		return &UsageError{Command: "config", Problem: "want: config check [FILE]"}
	}
	if len(pos) > 2 {
		return &UsageError{Command: "config", Problem: fmt.Sprintf("unexpected argument %q", pos[2])}
	}
	if len(pos) == 2 {
		c.global.config = pos[1]
	}
	path, err := c.configPath()
	if err != nil {
		return err
	}
	if path == "" {
		return fmt.Errorf("no configuration file to check: %s does not exist here (give a FILE or --config; without a file the built-in defaults are used)", DefaultConfigFile)
	}
	problems, err := checkConfig(ctx, c, path)
	if err != nil {
		return err
	}
	if c.cfg != nil {
		// Warnings do not fail the check: the file is valid, but probably not what was meant.
		for _, w := range c.cfg.Warnings() {
			w.Problem = "warning: " + w.Problem
			fmt.Fprintf(c.env.Stdout, "%s:%s\n", path, problemText(w))
		}
	}
	if len(problems) == 0 {
		c.printMCP(false)
		fmt.Fprintf(c.env.Stdout, "%s: OK\n", path)
		return nil
	}
	for _, p := range problems {
		fmt.Fprintf(c.env.Stdout, "%s:%s\n", path, problemText(p))
	}
	fmt.Fprintf(c.env.Stdout, "%d problem(s)\n", len(problems))
	return fmt.Errorf("%s: %w", path, ErrConfigProblems)
}

func problemText(p config.Problem) string {
	s := ""
	if p.Line > 0 {
		s = fmt.Sprint(p.Line) + ":"
	}
	if p.Key != "" {
		s += " " + p.Key + ":"
	}
	return s + " " + p.Problem
}

// checkConfig reads the file as far as it can (config.LoadPartial) and
// converts the rest the way the commands do (wiring.Runtime.Check), so
// every problem is reported at once, in line order: the file's own
// (syntax aside, which stops the reading) and those only the conversion
// sees (a retry policy for a capability that does not exist, a model role
// that cannot be built, a bad store URL, an address the server refuses).
func checkConfig(ctx context.Context, c *cmdEnv, path string) ([]config.Problem, error) {
	cfg, err := config.LoadPartial(path)
	var ce *config.Error
	if errors.As(err, &ce) {
		return ce.Problems, nil
	}
	if err != nil {
		return nil, err
	}
	c.cfg = cfg
	rt, err := c.runtime("")
	if err != nil {
		return nil, err
	}
	return rt.Check(ctx), nil
}
