package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/wiring"
)

// Exit statuses of eval, for CI.
const (
	ExitEvalFailed = 1 // an expectation failed: a metric is below its threshold
	ExitEvalError  = 2 // the evaluation could not be carried out (a bad case file or configuration, an infrastructure error in a run)
)

// cmdEval scores the application against a case file: `eval CASES.yaml`.
func cmdEval(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags(`[--repeats N] [--concurrency N] [--tags a,b] [--json FILE] [--junit FILE] [--compare CONFIG] [--judge CONFIG] CASES.yaml`)
	repeats := fs.Int("repeats", 0, "run every case N times (default: the file's repeats, else 1)")
	concurrency := fs.Int("concurrency", eval.DefaultConcurrency, "case runs at once")
	tags := fs.String("tags", "", "run only the cases with one of these tags (comma-separated)")
	jsonOut := fs.String("json", "", `write the report as JSON to FILE ("-": standard output, instead of the text report)`)
	junitOut := fs.String("junit", "", "write the report as JUnit XML to FILE")
	compare := fs.String("compare", "", "a second configuration file: run the cases under both and print the differences")
	judge := fs.String("judge", "", "a configuration file whose default model grades the rubrics (never a model under test)")
	timeout := fs.Duration("timeout", eval.DefaultTimeout, "bound on one case run")
	serverURL := fs.String("server", "", "evaluate a running server through its native API instead of an agent in this process")
	keyEnv := fs.String("key-env", "CAPGRAPH_API_KEY", "with --server: the environment variable holding the server's API key")
	record := fs.Bool("record", false, "record the result in the store (--store, the file's store, else the default SQLite file)")
	history := fs.Int("history", 0, "list the last N runs recorded in the store (of the case file's suite, when one is given) and exit")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *history > 0 && len(pos) <= 1 {
		return c.evalHistory(ctx, pos, *history)
	}
	if len(pos) != 1 {
		return &UsageError{Command: "eval", Problem: "one case file is required, e.g. eval cases.yaml"}
	}
	if *repeats < 0 || *concurrency < 1 {
		return &UsageError{Command: "eval", Problem: "--repeats must not be negative and --concurrency must be at least 1"}
	}
	if *serverURL != "" && *compare != "" {
		return &UsageError{Command: "eval", Problem: "--compare runs two configurations in this process; it cannot be combined with --server"}
	}
	// From here on every problem is the evaluation's, not the usage's: exit 2.
	infra := func(err error) error {
		fmt.Fprintf(c.env.Stderr, "%s eval: %s\n", c.app.Name, oneLine(err))
		return &exitError{code: ExitEvalError}
	}
	suite, err := eval.Load(c.env.path(pos[0]))
	if err != nil {
		return infra(err)
	}
	cfg, err := c.config()
	if err != nil {
		return infra(err)
	}
	opts := eval.Options{Concurrency: *concurrency, Repeats: *repeats, Timeout: *timeout}
	if *tags != "" {
		opts.Tags = strings.Split(*tags, ",")
	}
	if *judge != "" {
		if opts.Judge, err = c.evalJudge(c.env.path(*judge)); err != nil {
			return infra(err)
		}
	}
	var repA, repB *eval.Report
	if *serverURL != "" {
		repA, err = c.runServerEval(ctx, cfg, suite, *serverURL, *keyEnv, opts)
	} else {
		a, closeA, terr := c.evalTarget(ctx, cfg, c.cfgPath)
		if terr != nil {
			return infra(terr)
		}
		defer closeA()
		repA, err = c.runEval(ctx, suite, a, opts)
	}
	if err != nil {
		return infra(err)
	}
	if len(repA.Cases) == 0 {
		return infra(fmt.Errorf("no case of %s has the tags %s", pos[0], *tags))
	}
	status := evalStatus(repA)
	if *compare != "" {
		other, err := config.Load(c.env.path(*compare))
		if err != nil {
			return infra(err)
		}
		b, closeB, err := c.evalTarget(ctx, other, c.env.path(*compare))
		if err != nil {
			return infra(err)
		}
		defer closeB()
		repB, err = c.runEval(ctx, suite, b, opts)
		if err != nil {
			return infra(err)
		}
		status = max(status, evalStatus(repB))
		if err := eval.WriteComparison(c.env.Stdout, repA, repB); err != nil {
			return infra(err)
		}
	} else if *jsonOut != "-" {
		if err := repA.WriteText(c.env.Stdout); err != nil {
			return infra(err)
		}
	}
	if *jsonOut != "" {
		if err := c.writeReport(*jsonOut, repA.WriteJSON); err != nil {
			return infra(err)
		}
	}
	if *junitOut != "" {
		if err := c.writeReport(*junitOut, repA.WriteJUnit); err != nil {
			return infra(err)
		}
	}
	if *record {
		reports := []*eval.Report{repA}
		if repB != nil {
			reports = append(reports, repB)
		}
		if err := c.recordEval(ctx, reports); err != nil {
			return infra(err)
		}
	}
	if status != ExitOK {
		return &exitError{code: status}
	}
	return nil
}

// recordLog opens the store's record log.
func (c *cmdEnv) recordLog(ctx context.Context) (checkpoint.RecordLog, error) {
	st, err := c.openStore(ctx)
	if err != nil {
		return nil, err
	}
	log, ok := st.(checkpoint.RecordLog)
	if !ok {
		return nil, fmt.Errorf("the store %s keeps no records", c.spec.Kind)
	}
	return log, nil
}

// recordEval records the reports' summaries in the store.
func (c *cmdEnv) recordEval(ctx context.Context, reports []*eval.Report) error {
	log, err := c.recordLog(ctx)
	if err != nil {
		return err
	}
	for _, r := range reports {
		if err := eval.Record(ctx, log, r); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.env.Stderr, "recorded in the store (list with: %s eval --history 10)\n", c.env.Program)
	return nil
}

// evalHistory lists the last n runs recorded, of the suite of the case
// file given, if any.
func (c *cmdEnv) evalHistory(ctx context.Context, pos []string, n int) error {
	suite := ""
	if len(pos) == 1 {
		s, err := eval.Load(c.env.path(pos[0]))
		if err != nil {
			return err
		}
		suite = s.Name
	}
	log, err := c.recordLog(ctx)
	if err != nil {
		return err
	}
	runs, err := eval.Recent(ctx, log, suite, n)
	if err != nil {
		return err
	}
	return eval.WriteHistory(c.env.Stdout, runs)
}

// evalStatus is a report's exit status.
func evalStatus(r *eval.Report) int {
	switch {
	case r.Errors > 0:
		return ExitEvalError
	case !r.Passed:
		return ExitEvalFailed
	}
	return ExitOK
}

// runEval runs the suite, with a progress bar on a terminal.
func (c *cmdEnv) runEval(ctx context.Context, s *eval.Suite, t eval.Target, opts eval.Options) (*eval.Report, error) {
	return c.withProgress(opts, func(opts eval.Options) (*eval.Report, error) { return eval.Run(ctx, s, t, opts) })
}

// runServerEval runs the suite against a running server; the
// application's own capabilities say which act on the outside world.
func (c *cmdEnv) runServerEval(ctx context.Context, cfg *config.Config, s *eval.Suite, url, keyEnv string, opts eval.Options) (*eval.Report, error) {
	caps, err := c.app.Capabilities(cfg)
	if err != nil {
		return nil, err
	}
	writes := map[string]bool{}
	for _, cp := range caps {
		writes[cp.Name()] = capabilities.HasSideEffects(cp)
	}
	// The server is taken to run the models --config names.
	srv := eval.Server{URL: url, Key: c.env.Getenv(keyEnv), ModelNames: modelNames(cfg), SideEffects: func(name string) bool { return writes[name] }}
	return c.withProgress(opts, func(opts eval.Options) (*eval.Report, error) { return eval.RunServer(ctx, s, srv, opts) })
}

// withProgress runs an evaluation with a progress bar on a terminal.
func (c *cmdEnv) withProgress(opts eval.Options, run func(eval.Options) (*eval.Report, error)) (*eval.Report, error) {
	if *c.env.Terminal {
		opts.Progress = func(p eval.Progress) { c.progressBar(p) }
	}
	rep, err := run(opts)
	if *c.env.Terminal {
		fmt.Fprint(c.env.Stderr, "\r\033[K")
	}
	return rep, err
}

// progressBar redraws the one-line progress bar on stderr.
func (c *cmdEnv) progressBar(p eval.Progress) {
	const width = 24
	filled := width * p.Done / max(p.Total, 1)
	mark := "✓"
	if !p.Passed {
		mark = "✗"
	}
	line := fmt.Sprintf("[%s%s] %d/%d %s %s", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.Done, p.Total, mark, p.Case)
	fmt.Fprint(c.env.Stderr, "\r\033[K"+cut(line, c.width()))
}

// width is the terminal's width in columns.
func (c *cmdEnv) width() int {
	if c.env.Width > 0 {
		return c.env.Width
	}
	return 80
}

// cut shortens s to n runes.
func cut(s string, n int) string {
	if r := []rune(s); len(r) > n && n > 1 {
		return string(r[:n-1]) + "…"
	}
	return s
}

// writeReport writes a report to path ("-": standard output).
func (c *cmdEnv) writeReport(path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(c.env.Stdout)
	}
	path = c.env.path(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// evalTarget builds the agent configuration cfg describes for eval: its
// models, limits, options and policies, and for every case run a fresh
// set of the application's capabilities (App.Capabilities), so that one
// case's writes are not another's machine. Capabilities from MCP servers
// are connected once and shared.
func (c *cmdEnv) evalTarget(ctx context.Context, cfg *config.Config, path string) (eval.Target, func(), error) {
	logger, err := wiring.Logger(cfg, c.env.Stderr)
	if err != nil {
		return eval.Target{}, nil, err
	}
	rt, err := wiring.New(cfg, wiring.App{Name: c.app.Name, Capabilities: c.app.Capabilities},
		wiring.Options{Store: config.StoreMemory, Getenv: c.env.Getenv, Dir: c.env.Dir, Logger: logger})
	if err != nil {
		return eval.Target{}, nil, err
	}
	closeRT := func() {
		if err := rt.Close(); err != nil {
			fmt.Fprintf(c.env.Stderr, "%s: closing: %v\n", c.app.Name, err)
		}
	}
	ac, err := rt.AgentConfig(ctx, memory.New())
	if err != nil {
		closeRT()
		return eval.Target{}, nil, err
	}
	own := map[string]bool{}
	first, err := c.app.Capabilities(cfg)
	if err != nil {
		closeRT()
		return eval.Target{}, nil, err
	}
	for _, cp := range first {
		own[cp.Name()] = true
	}
	shared := ac.Registry
	name := path
	if name == "" {
		name = "built-in defaults"
	}
	t := eval.Target{
		Name:       name + " (" + modelsText(cfg) + ")",
		Config:     ac,
		ModelNames: modelNames(cfg),
		Registry: func(context.Context) (*capabilities.Registry, error) {
			caps, err := c.app.Capabilities(cfg)
			if err != nil {
				return nil, err
			}
			for _, cp := range shared.All() {
				if !own[cp.Name()] {
					caps = append(caps, cp)
				}
			}
			reg := capabilities.NewRegistry()
			for n, d := range shared.ContextTypes() {
				if err := reg.DeclareContextType(n, d); err != nil {
					return nil, err
				}
			}
			if err := reg.Register(caps...); err != nil {
				return nil, err
			}
			return reg, reg.Validate()
		},
	}
	return t, closeRT, nil
}

// modelNames names the models a configuration uses, provider/model at
// its endpoint, to refuse a judge among them.
func modelNames(cfg *config.Config) []string {
	var out []string
	for role := range cfg.Models {
		if m, ok := cfg.ModelFor(role); ok {
			out = append(out, modelName(m))
		}
	}
	sort.Strings(out)
	return out
}

func modelName(m config.Model) string {
	n := m.Provider + "/" + m.Model
	if m.BaseURL != "" {
		n += " at " + m.BaseURL
	}
	return n
}

// modelsText says which models a configuration uses ("offline" for none).
func modelsText(cfg *config.Config) string {
	names := modelNames(cfg)
	if len(names) == 0 {
		return "offline"
	}
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// evalJudge builds the judge from a configuration file's default model.
func (c *cmdEnv) evalJudge(path string) (*eval.Judge, error) {
	jcfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	m, ok := jcfg.ModelFor(string(llm.RoleDefault))
	if !ok {
		return nil, fmt.Errorf("judge %s: models.default is not set", path)
	}
	models, err := wiring.Models(jcfg, func(k string) (string, bool) { v := c.env.Getenv(k); return v, v != "" })
	if err != nil {
		return nil, err
	}
	model, ok := models.For(llm.RoleDefault)
	if !ok {
		return nil, errors.New("judge " + path + ": no default model")
	}
	return &eval.Judge{Model: model, Name: modelName(m)}, nil
}
