package cli

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/server"
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

// checkConfig parses the file and then converts it the way the commands do,
// so a problem only the conversion sees (a retry policy for a capability
// that does not exist, a model role that cannot be built, a bad store URL,
// an API key the server refuses) is reported too, with its line.
func checkConfig(ctx context.Context, c *cmdEnv, path string) ([]config.Problem, error) {
	cfg, err := config.Load(path)
	var ce *config.Error
	if errors.As(err, &ce) {
		return ce.Problems, nil
	}
	if err != nil {
		return nil, err
	}
	c.cfg = cfg
	var problems []config.Problem
	add := func(err error) {
		var ce *config.Error
		if errors.As(err, &ce) {
			problems = append(problems, ce.Problems...)
		} else if err != nil {
			problems = append(problems, config.Problem{Problem: oneLine(err)})
		}
	}
	if cfg.Store != "" {
		if _, err := ParseStore(cfg.Store, c.env.Getenv); err != nil {
			problems = append(problems, config.Problem{Line: cfg.Line("store"), Key: "store", Problem: oneLine(err)})
		}
	}
	models, err := Models(cfg, c.env.lookupEnv)
	add(err)
	reg, err := c.registry(ctx)
	if err != nil {
		add(err)
		return problems, nil
	}
	ac, err := AgentConfig(cfg, reg, memory.New(), models)
	add(err)
	if err != nil || models == nil {
		return problems, nil
	}
	a, err := agent.New(ac)
	if err != nil {
		add(err)
		return problems, nil
	}
	sc, err := ServerConfig(cfg, a, "", logging.Nop())
	add(err)
	if err == nil {
		if _, err := server.New(sc); err != nil {
			var se *server.ConfigError
			if errors.As(err, &se) {
				key := serverKey(se.Field)
				problems = append(problems, config.Problem{Line: lineOf(cfg, key), Key: key, Problem: se.Reason})
			} else {
				add(err)
			}
		}
	}
	return problems, nil
}

var principalField = regexp.MustCompile(`^Principals\[(\d+)\]\.?(\w*)$`)

// serverKey maps a server.Config field to the file's key.
func serverKey(field string) string {
	if m := principalField.FindStringSubmatch(field); m != nil {
		key := "server.api_keys[" + m[1] + "]"
		switch m[2] {
		case "Name":
			return key + ".name"
		case "KeySHA256":
			return key + ".key_sha256"
		case "Tenant":
			return key + ".tenant"
		case "MaxConcurrentRuns":
			return key + ".max_concurrent_runs"
		}
		return key
	}
	switch field {
	case "Addr":
		return "server.addr"
	case "MaxBodyBytes":
		return "server.max_body_bytes"
	case "MaxConcurrentRuns":
		return "server.limits.max_concurrent_runs"
	case "TurnTimeout":
		return "server.limits.run_timeout"
	}
	return "server"
}

// lineOf returns the line of key, or of the nearest enclosing key the file sets.
func lineOf(cfg *config.Config, key string) int {
	for key != "" {
		if l := cfg.Line(key); l > 0 {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			return 0
		}
		key = key[:i]
	}
	return 0
}
