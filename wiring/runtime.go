package wiring

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/eval"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/mcp"
	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/schedule"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/trigger"
)

// DefaultAppName names an App that names none: the capgraph command.
const DefaultAppName = "capgraph"

// App is an application built on capgraph: its name and its capabilities.
type App struct {
	// Name names the application (default DefaultAppName). Its default
	// store lives in a data directory of its own (DefaultStorePath), and
	// the threads its agent runs are recorded as its own
	// (agent.Config.Application): no other application runs them.
	Name string
	// Capabilities builds the application's capabilities from the loaded
	// configuration. Required.
	Capabilities func(cfg *config.Config) ([]capabilities.Capability, error)
}

// ErrNoCapabilities: the App has no Capabilities function.
var ErrNoCapabilities = errors.New("wiring: App.Capabilities is required")

// Options says what the runtime reads of the process.
type Options struct {
	// Store, when set, replaces the file's store ("memory", "sqlite:PATH",
	// a postgres:// URL): a command-line flag.
	Store string
	// Getenv reads the environment (the data directory, API keys,
	// CAPGRAPH_API_KEYS); nil means os.Getenv.
	Getenv func(string) string
	// Dir is the directory relative paths of the file are read from
	// (server.audit_log); "" means the process's working directory.
	Dir string
	// Logger receives what capability sources log (MCP servers' restarts);
	// nil discards.
	Logger logging.Logger
	// Models, when set, replaces the models the file configures: a scripted
	// model (llm/llmtest) for tests and benchmarks of a whole application.
	Models llm.Models
	// LogRuns logs one line per significant event of every run through
	// Logger (`capgraph serve` does; see docs/observability.md).
	LogRuns bool
}

// Runtime builds what a configuration file describes for an App — its
// capability registry, its models, its checkpoint store, its agent and its
// server configuration — each once, when first asked for, so a front end
// that needs less opens nothing it does not use. Close releases what was
// opened. A Runtime is not safe for concurrent use while it builds.
type Runtime struct {
	cfg  *config.Config
	app  App
	opts Options

	reg     *capabilities.Registry
	models  llm.Models
	spec    *StoreSpec
	store   checkpoint.Store
	agent   *agent.Agent
	mcp     *mcp.Set
	closers []func() error
	// telemetry is built once (Telemetry).
	telemetry *Telemetry
}

// New returns the runtime of app under cfg (nil cfg: config.Default()).
// Nothing is opened yet.
func New(cfg *config.Config, app App, opts Options) (*Runtime, error) {
	if app.Capabilities == nil {
		return nil, ErrNoCapabilities
	}
	if app.Name == "" {
		app.Name = DefaultAppName
	}
	if err := CheckAppName(app.Name); err != nil {
		return nil, err
	}
	if cfg == nil {
		cfg = config.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	return &Runtime{cfg: cfg, app: app, opts: opts}, nil
}

// Config returns the configuration the runtime was built from.
func (r *Runtime) Config() *config.Config { return r.cfg }

// App returns the application (with its default name filled in).
func (r *Runtime) App() App { return r.app }

// Close releases what the runtime opened (the store, capability sources,
// an audit file), last opened first.
func (r *Runtime) Close() error {
	var errs []error
	for i := len(r.closers) - 1; i >= 0; i-- {
		errs = append(errs, r.closers[i]())
	}
	r.closers = nil
	return errors.Join(errs...)
}

// capabilitySource is one place the runtime's capabilities come from. load
// may return a close function (a connection to release with the runtime).
type capabilitySource struct {
	// name says where the capabilities come from, in errors.
	name string
	// load gets the names already registered (taken), so a source can name
	// its capabilities apart from them.
	load func(ctx context.Context, cfg *config.Config, taken func(string) bool) (caps []capabilities.Capability, close func() error, err error)
}

// capabilitySources lists where the capabilities come from, in registration
// order: the application's own, then each source the configuration names
// (a section of the file that adds capabilities adds its sources here).
func (r *Runtime) capabilitySources() []capabilitySource {
	return []capabilitySource{{
		name: "capabilities",
		load: func(_ context.Context, cfg *config.Config, _ func(string) bool) ([]capabilities.Capability, func() error, error) {
			caps, err := r.app.Capabilities(cfg)
			return caps, nil, err
		},
	}, {
		name: "mcp_servers",
		load: func(ctx context.Context, cfg *config.Config, taken func(string) bool) ([]capabilities.Capability, func() error, error) {
			logger := r.opts.Logger
			if logger == nil {
				logger = logging.Nop()
			}
			set, err := ConnectMCP(ctx, cfg, taken, r.lookupEnv, logger)
			if err != nil {
				return nil, nil, err
			}
			r.mcp = set
			return set.Capabilities(), set.Close, nil
		},
	}}
}

// MCP returns the MCP servers the registry started (nil before Registry,
// empty without mcp_servers).
func (r *Runtime) MCP() *mcp.Set { return r.mcp }

// Registry builds the application's capability registry once, from every
// capability source, and validates it.
func (r *Runtime) Registry(ctx context.Context) (*capabilities.Registry, error) {
	if r.reg != nil {
		return r.reg, nil
	}
	reg := capabilities.NewRegistry()
	for _, src := range r.capabilitySources() {
		taken := func(name string) bool { _, ok := reg.Get(name); return ok }
		caps, closeFn, err := src.load(ctx, r.cfg, taken)
		if closeFn != nil {
			r.closers = append(r.closers, closeFn)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src.name, err)
		}
		if err := reg.Register(caps...); err != nil {
			return nil, err
		}
	}
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	r.reg = reg
	return reg, nil
}

// Models builds the models of the file's roles once (llm.None when the file
// configures none: offline).
func (r *Runtime) Models() (llm.Models, error) {
	if r.models != nil {
		return r.models, nil
	}
	if r.opts.Models != nil {
		r.models = r.opts.Models
		return r.models, nil
	}
	m, err := Models(r.cfg, r.lookupEnv)
	if err != nil {
		return nil, err
	}
	r.models = m
	return m, nil
}

func (r *Runtime) lookupEnv(k string) (string, bool) {
	v := r.opts.Getenv(k)
	return v, v != ""
}

// StoreSpec resolves the store: Options.Store, else the file's store, else
// the application's default SQLite file.
func (r *Runtime) StoreSpec() (StoreSpec, error) {
	if r.spec != nil {
		return *r.spec, nil
	}
	v := r.opts.Store
	if v == "" {
		v = r.cfg.Store
	}
	spec, err := ParseStore(v, r.app.Name, r.opts.Getenv)
	if err != nil {
		return StoreSpec{}, err
	}
	r.spec = &spec
	return spec, nil
}

// Store opens the store once.
func (r *Runtime) Store(ctx context.Context) (checkpoint.Store, error) {
	if r.store != nil {
		return r.store, nil
	}
	spec, err := r.StoreSpec()
	if err != nil {
		return nil, err
	}
	st, closeFn, err := OpenStore(ctx, spec)
	if err != nil {
		return nil, err
	}
	r.store = st
	r.closers = append(r.closers, closeFn)
	return st, nil
}

// AgentConfig is the agent's configuration over store: AgentConfig over
// the runtime's registry and models, with the application's name.
func (r *Runtime) AgentConfig(ctx context.Context, store checkpoint.Store) (agent.Config, error) {
	reg, err := r.Registry(ctx)
	if err != nil {
		return agent.Config{}, err
	}
	models, err := r.Models()
	if err != nil {
		return agent.Config{}, err
	}
	ac, err := AgentConfig(r.cfg, reg, store, models)
	ac.Application = r.app.Name
	if err != nil {
		return ac, err
	}
	tel, err := r.Telemetry(ctx)
	if err != nil {
		return ac, err
	}
	ac.Observer = tel.Observer
	return ac, nil
}

// Agent builds the agent once, over the runtime's store. Close closes it
// (agent.Agent.Close: its runs stop), before the store it runs on.
func (r *Runtime) Agent(ctx context.Context) (*agent.Agent, error) {
	if r.agent != nil {
		return r.agent, nil
	}
	st, err := r.Store(ctx)
	if err != nil {
		return nil, err
	}
	ac, err := r.AgentConfig(ctx, st)
	if err != nil {
		return nil, err
	}
	a, err := agent.New(ac)
	if err != nil {
		return nil, err
	}
	r.agent = a
	r.closers = append(r.closers, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), agentCloseWait)
		defer cancel()
		return a.Close(ctx)
	})
	return a, nil
}

// Scheduler is the scheduler of the file's schedules over the runtime's
// agent and store, logging to logger; nil when the file has none. With
// srv, the runs are srv's (server.Server.RunFor), each schedule's
// principal's: its key lists their threads and answers their approvals.
func (r *Runtime) Scheduler(ctx context.Context, logger logging.Logger, srv *server.Server) (*schedule.Scheduler, error) {
	if len(r.cfg.Schedules) == 0 {
		return nil, nil
	}
	reg, err := r.Registry(ctx)
	if err != nil {
		return nil, err
	}
	schedules, err := Schedules(r.cfg, reg)
	if err != nil {
		return nil, err
	}
	a, err := r.Agent(ctx)
	if err != nil {
		return nil, err
	}
	st, err := r.Store(ctx)
	if err != nil {
		return nil, err
	}
	ss, ok := st.(schedule.Store)
	if !ok {
		return nil, fmt.Errorf("the store keeps no leases or records, which schedules need")
	}
	cfg := schedule.Config{Schedules: schedules, Runner: a, Store: ss, Owner: a.LeaseOwner(), Logger: logger}
	if srv != nil {
		cfg.RunFor = func(ctx context.Context, s schedule.Schedule, req agent.TurnRequest) iter.Seq2[agent.Event, error] {
			return srv.RunFor(ctx, server.Owner{Tenant: s.Tenant, Principal: s.Principal}, req)
		}
	}
	return schedule.New(cfg)
}

// agentCloseWait bounds how long Close waits for the agent's runs to stop
// (a capability that ignores its context would otherwise hold the process
// up); the store is closed after it all the same.
const agentCloseWait = 30 * time.Second

// Logger builds the logger the file configures, writing to w.
func (r *Runtime) Logger(w interface{ Write([]byte) (int, error) }) (logging.Logger, error) {
	return Logger(r.cfg, w)
}

// ServerConfig builds the agent and the server's configuration for it:
// ServerConfig with the keys of CAPGRAPH_API_KEYS, the audit file of
// server.audit_log (opened for appending; closed with the runtime), and,
// on a PostgreSQL store shared by replicas, a look for cut runs to take
// over every lease TTL (server.Config.RecoverEvery, RecoverGrace).
func (r *Runtime) ServerConfig(ctx context.Context, logger logging.Logger) (server.Config, error) {
	a, err := r.Agent(ctx)
	if err != nil {
		return server.Config{}, err
	}
	sc, err := ServerConfig(r.cfg, a, r.opts.Getenv(EnvAPIKeys), logger)
	if err != nil {
		return sc, err
	}
	if tel, err := r.Telemetry(ctx); err != nil {
		return sc, err
	} else if tel.Metrics != nil {
		sc.ObserveRequest = tel.Metrics.ObserveRequest
		if tel.MetricsListen == "" {
			sc.Metrics = tel.Metrics.Handler()
		}
	}
	if p := r.cfg.Server.AuditLog; p != "" {
		f, err := server.OpenJSONLAuditFile(r.path(p))
		if err != nil {
			return sc, &config.Error{File: r.cfg.Source(), Problems: []config.Problem{{Line: r.cfg.Line("server.audit_log"), Key: "server.audit_log",
				Problem: "cannot open the audit file: " + err.Error()}}}
		}
		r.closers = append(r.closers, f.Close)
		sc.Audit = f
	}
	if st, err := r.Store(ctx); err == nil {
		if log, ok := st.(checkpoint.RecordLog); ok {
			sc.Evaluations = evaluations{log}
		}
	}
	if err := checkOwners(r.cfg, sc.Principals); err != nil {
		return sc, err
	}
	if len(r.cfg.Triggers) > 0 {
		reg, err := r.Registry(ctx)
		if err != nil {
			return sc, err
		}
		triggers, err := Triggers(r.cfg, reg, r.opts.Getenv)
		if err != nil {
			return sc, err
		}
		// The server starts the runs (server.Config.Triggers gives it the
		// handler's starter once it exists), so they are its runs.
		start := &serverStarter{}
		tc := trigger.Config{Triggers: triggers, Starter: start, Logger: logger}
		if st, err := r.Store(ctx); err == nil {
			tc.Rate, _ = st.(runstore.RateCounter) // replicas share the rate; else each counts its own
		}
		h, err := trigger.New(tc)
		if err != nil {
			return sc, err
		}
		sc.Triggers = func(fn server.StartFunc) http.Handler {
			start.fn = fn
			return h
		}
	}
	if spec, _ := r.StoreSpec(); spec.Kind == StorePostgres {
		// Replicas share a PostgreSQL store: a replica that died leaves its
		// cut runs leased until the lease expires, so look again every TTL;
		// a run another live replica recorded a moment ago is its own.
		sc.RecoverEvery, sc.RecoverGrace = a.LeaseTTL(), a.LeaseTTL()
	}
	return sc, nil
}

func (r *Runtime) path(p string) string {
	if p == "" || filepath.IsAbs(p) || r.opts.Dir == "" {
		return p
	}
	return filepath.Join(r.opts.Dir, p)
}

// Check lists every problem of the configuration at once, in line order:
// the file's own (a Config from config.LoadPartial carries them) and those
// only the conversion sees — a store value, a model role that cannot be
// built (an unset API key variable), a retry policy for a capability that
// does not exist, an MCP server that does not start or lacks a tool, an
// allowed capability the agent does not have, an address the server
// refuses without API keys. Each step checks what it can whatever the
// others found; a problem already reported for a key is not repeated. The
// store is not opened.
func (r *Runtime) Check(ctx context.Context) []config.Problem {
	cfg := r.cfg
	var found []config.Problem
	add := func(err error) {
		var ce *config.Error
		if errors.As(err, &ce) {
			found = append(found, ce.Problems...)
		} else if err != nil {
			found = append(found, config.Problem{Problem: oneLine(err)})
		}
	}
	if cfg.Store != "" {
		if _, err := ParseStore(cfg.Store, r.app.Name, r.opts.Getenv); err != nil {
			found = append(found, config.Problem{Line: cfg.Line("store"), Key: "store", Problem: oneLine(err)})
		}
	}
	models, err := r.Models()
	if err != nil {
		add(err)
		models = llm.None // the rest is checked as if offline
	}
	// The server is checked with the agent when it can be built, else
	// without it (only the capability names of API keys need it).
	var runner agent.Runner = noRunner{}
	if reg, err := r.Registry(ctx); err != nil {
		add(err)
		// The application's own capabilities still say which retry
		// policies name nothing, but for names an MCP server that did not
		// start may have provided.
		if own, err := r.ownRegistry(); err == nil {
			_, err := AgentConfig(cfg, own, memory.New(), models)
			add(withoutMCPNames(cfg, err))
		}
	} else {
		ac, err := AgentConfig(cfg, reg, memory.New(), models)
		ac.Application = r.app.Name
		add(err) // unknown capabilities' retry policies are left out of ac
		_, err = Schedules(cfg, reg)
		add(err)
		_, err = Triggers(cfg, reg, r.opts.Getenv)
		add(err)
		if a, err := agent.New(ac); err != nil {
			add(err)
		} else {
			runner = a
			defer a.Close(ctx) //nolint:errcheck // it ran nothing
		}
	}
	sc, err := ServerConfig(cfg, runner, r.opts.Getenv(EnvAPIKeys), logging.Nop())
	add(err)
	if err == nil {
		add(checkOwners(cfg, sc.Principals))
	}
	if _, ok := runner.(noRunner); ok {
		sc.Runs = memory.New() // the stand-in keeps no run records
	}
	if err == nil {
		if _, err := server.New(sc); err != nil {
			add(ServerError(cfg, err))
		}
	}
	return mergeProblems(cfg.Problems(), found)
}

// ownRegistry is the application's own capabilities, without the sources
// the configuration adds.
func (r *Runtime) ownRegistry() (*capabilities.Registry, error) {
	caps, err := r.app.Capabilities(r.cfg)
	if err != nil {
		return nil, err
	}
	reg := capabilities.NewRegistry()
	return reg, reg.Register(caps...)
}

// withoutMCPNames drops from a *config.Error the problems of retry policies
// whose capability name starts with an MCP server's prefix.
func withoutMCPNames(cfg *config.Config, err error) error {
	var ce *config.Error
	if !errors.As(err, &ce) {
		return err
	}
	var keep []config.Problem
	for _, p := range ce.Problems {
		name := strings.TrimPrefix(p.Key, "retry.capabilities.")
		if !slices.ContainsFunc(MCPServers(cfg), func(s mcp.ServerConfig) bool { return strings.HasPrefix(name, mcp.Prefix(s)+"_") }) {
			keep = append(keep, p)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return &config.Error{File: ce.File, Problems: keep}
}

// EnvAPIKeys is the environment variable holding API keys beside the
// file's server.api_keys ("name=key,name=key").
const EnvAPIKeys = "CAPGRAPH_API_KEYS"

// NoKeysHint follows the server's refusal to listen beyond loopback
// without API keys: where keys come from.
const NoKeysHint = "(give keys in server.api_keys or in " + EnvAPIKeys + "=name=key, or listen on 127.0.0.1)"

// ServerError turns a server.ConfigError from server.New into a
// *config.Error naming the file's key and line (and, for an address
// refused without keys, how to give keys); other errors pass unchanged.
func ServerError(cfg *config.Config, err error) error {
	var se *server.ConfigError
	if !errors.As(err, &se) {
		return err
	}
	key := serverKey(se.Field)
	msg := se.Reason
	if se.Field == "Addr" {
		msg += " " + NoKeysHint
	}
	return &config.Error{File: cfg.Source(), Problems: []config.Problem{{Line: lineOf(cfg, key), Key: key, Problem: msg}}}
}

// mergeProblems returns the file's problems and those found converting it,
// in line order (the file's first on a line), without a converted problem
// about a key the file already has one for.
func mergeProblems(file, found []config.Problem) []config.Problem {
	out := slices.Clone(file)
	for _, p := range found {
		dup := slices.ContainsFunc(out, func(q config.Problem) bool {
			return q.Problem == p.Problem && q.Key == p.Key || p.Key != "" && slices.ContainsFunc(file, func(f config.Problem) bool { return sameSubject(f.Key, p.Key) })
		})
		if !dup {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b config.Problem) int { return a.Line - b.Line })
	return out
}

// sameSubject reports whether two keys are about the same thing: one
// contains the other ("server.api_keys[0]" and "server.api_keys[0].key"),
// or they are in the same list element.
func sameSubject(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	within := func(k, in string) bool {
		return k == in || strings.HasPrefix(k, in+".") || strings.HasPrefix(k, in+"[")
	}
	if within(a, b) || within(b, a) {
		return true
	}
	elem := func(k string) string {
		if i := strings.IndexByte(k, ']'); i >= 0 {
			return k[:i+1]
		}
		return ""
	}
	return elem(a) != "" && elem(a) == elem(b)
}

// noRunner stands in for the agent when it cannot be built, so the
// server's own rules are still checked.
type noRunner struct{}

var errNoAgent = errors.New("wiring: no agent (configuration check)")

func (noRunner) Run(context.Context, agent.TurnRequest) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) { yield(agent.Event{}, errNoAgent) }
}
func (noRunner) Resume(context.Context, string, agent.Answer) iter.Seq2[agent.Event, error] {
	return func(yield func(agent.Event, error) bool) { yield(agent.Event{}, errNoAgent) }
}
func (noRunner) State(context.Context, string) (state.State, agent.RunStatus, error) {
	return state.State{}, "", errNoAgent
}
func (noRunner) DeleteThread(context.Context, string) error { return errNoAgent }

var principalField = regexp.MustCompile(`^Principals\[(\d+)\]\.?(\w*)$`)

// serverKey maps a server.Config field to the file's key.
// listField is a server.Config list field, whole or one entry
// ("AllowedHosts", "CORSOrigins[1]"); listKeys are their YAML keys.
var listField = regexp.MustCompile(`^(AllowedHosts|CORSOrigins|FrameAncestors)(\[\d+\])?$`)

var listKeys = map[string]string{"AllowedHosts": "server.allowed_hosts", "CORSOrigins": "server.cors_origins", "FrameAncestors": "server.frame_ancestors"}

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
	if m := listField.FindStringSubmatch(field); m != nil {
		if key, ok := listKeys[m[1]]; ok {
			return key + m[2]
		}
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

// oneLine joins a multi-line error message into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

// evaluations lists the evaluation runs recorded in a store's record log
// (server.EvaluationLister).
type evaluations struct{ log checkpoint.RecordLog }

func (e evaluations) RecentEvaluations(ctx context.Context, limit int) ([]any, error) {
	runs, err := eval.Recent(ctx, e.log, "", limit)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(runs))
	for i, r := range runs {
		out[i] = r
	}
	return out, nil
}

// serverStarter starts trigger runs on the server, once the server has
// given its StartFunc (server.Config.Triggers, called by server.New).
type serverStarter struct{ fn server.StartFunc }

func (s *serverStarter) Start(ctx context.Context, owner trigger.Owner, req agent.TurnRequest) (string, error) {
	if s.fn == nil {
		return "", errors.New("the server is not started")
	}
	return s.fn(ctx, server.Owner{Tenant: owner.Tenant, Principal: owner.Principal}, req)
}

// checkOwners reports a trigger or schedule whose principal names no API
// key (its runs would all fail).
func checkOwners(cfg *config.Config, keys []server.Principal) error {
	var problems []config.Problem
	check := func(key string, o server.Owner) {
		if o.Principal == "" {
			return
		}
		tenant := cmp.Or(o.Tenant, "default")
		if slices.ContainsFunc(keys, func(p server.Principal) bool { return p.Name == o.Principal && cmp.Or(p.Tenant, "default") == tenant }) {
			return
		}
		problems = append(problems, config.Problem{Line: cfg.Line(key), Key: key,
			Problem: fmt.Sprintf("no API key named %q in tenant %q (server.api_keys or %s name the keys)", o.Principal, tenant, EnvAPIKeys)})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Triggers)) {
		t := cfg.Triggers[name]
		check("triggers."+name+".principal", server.Owner{Tenant: t.Tenant, Principal: t.Principal})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Schedules)) {
		sc := cfg.Schedules[name]
		check("schedules."+name+".principal", server.Owner{Tenant: sc.Tenant, Principal: sc.Principal})
	}
	if len(problems) > 0 {
		return &config.Error{File: cfg.Source(), Problems: problems}
	}
	return nil
}
