package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/wiring"
)

// DefaultConfigFile is read from the working directory when --config is not
// given and the file exists.
const DefaultConfigFile = "capgraph.yaml"

// Exit statuses.
const (
	ExitOK    = 0 // done; for run: the question was answered
	ExitError = 1 // a FATAL failure, a bad configuration, a store that cannot be opened (run: see ExitNotAnswered)
	ExitUsage = 2 // bad usage: unknown command or flag, missing argument
)

// Exit statuses of `run`, for CI (docs/operations.md, "Headless runs"):
// ExitOK when the turn answered; ExitNotAnswered when it ended without an
// answer — the error report, a refusal, clarifying questions, or a wait
// for an approval; ExitInfrastructure when it could not run or did not
// end — bad usage, a bad configuration, a store or model that cannot be
// used, a FATAL failure, an interrupt.
const (
	ExitNotAnswered    = 1
	ExitInfrastructure = 2
)

// exitError ends a command with status code; err, when set, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// App is an application built on capgraph: its name and its capabilities.
// Main gives it every capgraph command.
type App struct {
	// Name is the command's name in usage and messages (default
	// "capgraph"), and the application's: its default store is its own
	// (~/.local/share/NAME/NAME.db, see wiring.DefaultStorePath), and every
	// thread it runs records it, so another application refuses the thread
	// even in a shared store (agent.Config.Application). Letters, digits,
	// '.', '_' and '-'.
	Name string
	// Summary is one line shown at the top of the usage text.
	Summary string
	// Capabilities builds the application's capabilities from the loaded
	// configuration (which every command loads first). Required.
	Capabilities func(cfg *config.Config) ([]capabilities.Capability, error)
	// Examples are demo questions shown by serve and by chat's /help.
	Examples []string
}

// Env is what a command sees of the outside world; tests inject it.
type Env struct {
	// Args are the arguments after the program name.
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Dir is the working directory, where capgraph.yaml is looked for
	// ("" means the process's).
	Dir string
	// Terminal says whether Stdout is an interactive terminal (live status
	// line); nil means detect it from Stdout.
	Terminal *bool
	// Now is the clock of the status line; nil means time.Now.
	Now func() time.Time
	// Program is how the user runs the command, in usage and in the hints
	// the commands print ("capgraph", "go run ./cmd/capgraph"); "" means
	// App.Name. Main sets it from the process (Invocation).
	Program string
	// Width is the terminal's width in columns for the status line and
	// for tables; 0 means ask the terminal (80 when it does not say).
	Width int
}

// Main runs the command line of app with the process's arguments and
// standard streams, and exits with the command's status. Interrupt and
// SIGTERM cancel the command's context: a running turn stops at its next
// checkpoint and can be resumed.
func Main(app App) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Program: processInvocation()})
	stop()
	os.Exit(code)
}

// UsageError is bad usage: an unknown command or flag, a missing argument.
// It exits with ExitUsage.
type UsageError struct {
	Command string
	Problem string
}

func (e *UsageError) Error() string {
	if e.Command == "" {
		return e.Problem
	}
	return e.Command + ": " + e.Problem
}

// ErrNoCapabilities: the App has no Capabilities function.
var ErrNoCapabilities = wiring.ErrNoCapabilities

// command is one subcommand.
type command struct {
	name  string
	args  string
	short string
	run   func(ctx context.Context, c *cmdEnv, args []string) error
}

func (a App) commands() []command {
	return []command{
		{"run", `"question"`, "answer one question and exit", cmdRun},
		{"chat", "", "talk with the agent; history is kept in the store (--thread to resume)", cmdChat},
		{"serve", "", "start the HTTP server: web page, OpenAI-compatible API, native API", cmdServe},
		{"graph", "", "print the agent graph (Mermaid or DOT); with --thread, a thread's last plan", cmdGraph},
		{"capabilities", "", "list the capabilities: provides, requires, retry policy, approval", cmdCapabilities},
		{"audit", "", "list the audit records of side-effecting steps (refused, approved, executed, …)", cmdAudit},
		{"history", "THREAD", "list a thread's kept checkpoints: node, time, plan, results, outcome", cmdHistory},
		{"fork", "THREAD", "start a new thread from a kept checkpoint (--at, --input, --plan); its writes go to the simulator", cmdFork},
		{"replay", "THREAD", "run a fork's turn under this configuration (--conversation: every message again)", cmdReplay},
		{"compare", "LEFT RIGHT", "two threads' turns side by side: route, severities, approvals, answer, calls, tokens, time", cmdCompare},
		{"schedules", "", "list the configured schedules: when, next run, last outcome", cmdSchedules},
		{"store", "prune", "prune the intermediate checkpoints of finished turns (--vacuum: shrink an SQLite file)", cmdStore},
		{"eval", "CASES.yaml", "score the agent against a case file (--compare CONFIG: two configurations); exit 0 pass, 1 fail, 2 error", cmdEval},
		{"config", "check [FILE]", "validate a configuration file, naming each problem's line", cmdConfig},
		{"help", "", "show this help", nil},
	}
}

// Run runs one command line and returns its exit status. It never calls
// os.Exit, so tests and other programs can drive it.
func (a App) Run(ctx context.Context, env Env) int {
	env = env.withDefaults()
	if a.Name == "" {
		a.Name = "capgraph"
	}
	if env.Program == "" {
		env.Program = a.Name
	}
	err := a.dispatch(ctx, env)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			var ce *config.Error
			if errors.As(ee.err, &ce) {
				fmt.Fprintf(env.Stderr, "%s: %s\n", a.Name, ce.Error())
			} else {
				fmt.Fprintf(env.Stderr, "%s: %s\n", a.Name, oneLine(ee.err))
			}
		}
		return ee.code
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(env.Stderr, "%s: %s\nRun '%s help' for usage.\n", a.Name, ue.Error(), env.Program)
		return ExitUsage
	}
	if errors.Is(err, errHelp) {
		return ExitOK
	}
	var ce *config.Error
	if errors.As(err, &ce) {
		// Every problem on its own line, each with its line number.
		fmt.Fprintf(env.Stderr, "%s: %s\n", a.Name, ce.Error())
		return ExitError
	}
	fmt.Fprintf(env.Stderr, "%s: %s\n", a.Name, oneLine(err))
	return ExitError
}

// errHelp ends a command that printed its help.
var errHelp = errors.New("help printed")

func (a App) dispatch(ctx context.Context, env Env) error {
	if a.Capabilities == nil {
		return ErrNoCapabilities
	}
	args := env.Args
	// Global flags may come before the command too.
	var g globalFlags
	pre := flag.NewFlagSet(a.Name, flag.ContinueOnError)
	pre.SetOutput(io.Discard)
	g.register(pre)
	if err := pre.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.usage(env.Stdout, env.Program)
			return errHelp
		}
		return &UsageError{Problem: err.Error()}
	}
	args = pre.Args()
	if len(args) == 0 {
		a.usage(env.Stderr, env.Program)
		return &UsageError{Problem: "no command given"}
	}
	name, rest := args[0], args[1:]
	if name == "help" || name == "-h" || name == "--help" {
		a.usage(env.Stdout, env.Program)
		return nil
	}
	for _, c := range a.commands() {
		if c.name == name && c.run != nil {
			ce := &cmdEnv{app: a, env: env, global: g, name: name}
			defer ce.close()
			return c.run(ctx, ce, rest)
		}
	}
	return &UsageError{Problem: fmt.Sprintf("unknown command %q", name)}
}

func (a App) usage(w io.Writer, prog string) {
	if a.Summary != "" {
		fmt.Fprintln(w, a.Summary)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Usage: %s [--config FILE] [--store STORE] COMMAND [flags]\n\nCommands:\n", prog)
	for _, c := range a.commands() {
		use := c.name
		if c.args != "" {
			use += " " + c.args
		}
		fmt.Fprintf(w, "  %-22s %s\n", use, c.short)
	}
	fmt.Fprintf(w, `
Global flags:
  --config FILE   configuration file (default %s in the working directory, if present)
  --store STORE   memory | sqlite:PATH | postgres://… (default: SQLite in the application's data directory)

With nothing configured, the agent runs offline (no LLM) with a SQLite store.
Run '%s COMMAND -h' for a command's flags.
`, DefaultConfigFile, prog)
}

type globalFlags struct {
	config string
	store  string
}

func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.config, "config", g.config, "configuration file (default "+DefaultConfigFile+" if present)")
	fs.StringVar(&g.store, "store", g.store, "checkpoint store: memory | sqlite:PATH | postgres://…")
}

func (e Env) withDefaults() Env {
	if e.Stdin == nil {
		e.Stdin = strings.NewReader("")
	}
	if e.Stdout == nil {
		e.Stdout = io.Discard
	}
	if e.Stderr == nil {
		e.Stderr = io.Discard
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Terminal == nil {
		t := isTerminal(e.Stdout) && e.Getenv("TERM") != "dumb"
		e.Terminal = &t
	}
	return e
}

func (e Env) path(p string) string {
	if p == "" || filepath.IsAbs(p) || e.Dir == "" {
		return p
	}
	return filepath.Join(e.Dir, p)
}

// parseArgs parses fs over args with flags and positional arguments in any
// order ("run 'q' --store memory" as well as "run --store memory 'q'").
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first positional argument, or after "--".
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlags returns a command's flag set with the global flags.
func (c *cmdEnv) newFlags(usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(c.app.Name+" "+c.name, flag.ContinueOnError)
	fs.SetOutput(c.env.Stderr)
	c.global.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(c.env.Stderr, "Usage: %s %s %s\n\nFlags:\n", c.env.Program, c.name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a command's flags, turning flag errors into usage errors.
func (c *cmdEnv) parse(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, errHelp
	}
	if err != nil {
		return nil, &UsageError{Command: c.name, Problem: err.Error()}
	}
	return pos, nil
}

// oneLine joins a multi-line error message for the one-line reason.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
