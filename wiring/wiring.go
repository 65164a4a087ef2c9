package wiring

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/logging/logrusadapter"
	"github.com/capgraph/capgraph/nodes"
	"github.com/capgraph/capgraph/router"
	"github.com/capgraph/capgraph/schedule"
	"github.com/capgraph/capgraph/schedule/spec"
	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/state"
	"github.com/capgraph/capgraph/trigger"
)

// neverExpires stands in for approval.expires_after: 0 ("never") in the
// server, whose zero value means its own default.
const neverExpires = 100 * 365 * 24 * time.Hour

// LLMConfig converts the file's models into the llm package's Config. Every
// role the file names gets its fields merged over the default role's
// (config.ModelFor), so llm sees complete role configs.
func LLMConfig(cfg *config.Config) llm.Config {
	out := llm.Config{Fallback: cfg.Fallback}
	if len(cfg.Models) == 0 {
		return out
	}
	out.Roles = map[llm.Role]llm.RoleConfig{}
	for role := range cfg.Models {
		m, ok := cfg.ModelFor(role)
		if !ok {
			continue
		}
		out.Roles[llm.Role(role)] = llm.RoleConfig{
			Provider:        m.Provider,
			Model:           m.Model,
			BaseURL:         m.BaseURL,
			APIKeyEnv:       m.APIKeyEnv,
			Temperature:     m.Temperature,
			MaxTokens:       m.MaxTokens,
			Timeout:         m.Timeout,
			IdleTimeout:     m.IdleTimeout,
			LegacyMaxTokens: m.LegacyMaxTokens,
			JSONMode:        m.JSONMode,
			StreamUsage:     m.StreamUsage,
			PromptCache:     m.PromptCache,
		}
	}
	return out
}

// AgentOptions returns the per-turn defaults the file configures (agent.Config.Options).
func AgentOptions(cfg *config.Config) state.Options {
	return state.Options{
		PlanApproval:       cfg.Approval.PlanApproval,
		ApprovalMode:       cfg.Approval.GlobalMode,
		WritesEnabled:      cfg.ControlSystem.WritesEnabled,
		SkipTaskExtraction: cfg.AgentControl.SkipTaskExtraction,
		SkipClassification: cfg.AgentControl.SkipClassification,
		Target:             cfg.ControlSystem.Target,
	}
}

// AgentTargets returns the target systems the file configures
// (agent.Config.Targets), nil when it names none.
func AgentTargets(cfg *config.Config) map[string]agent.TargetPolicy {
	if len(cfg.ControlSystem.Targets) == 0 {
		return nil
	}
	out := make(map[string]agent.TargetPolicy, len(cfg.ControlSystem.Targets))
	for name, t := range cfg.ControlSystem.Targets {
		out[name] = agent.TargetPolicy{WritesEnabled: t.WritesEnabled, Simulated: t.Simulated, Approval: t.Approval, MaxWritesPerTurn: t.MaxWritesPerTurn}
	}
	return out
}

// DefaultDurability is an application's checkpoint durability when its
// file leaves checkpoints.durability out. It is async, where the engine's
// own default is sync: an application's server keeps every turn's input in
// the turn's run record (agent.WithInputKept), so a crash repeats at most
// the reads since a side effect, an approval or the turn's end was made
// durable, never a side effect, and a turn waits for 2 commits instead of
// one per step (docs/reliability.md, "Checkpoint durability").
const DefaultDurability = graph.DurabilityAsync

// DurabilityOf is the checkpoint durability the file sets, DefaultDurability
// when it sets none.
func DurabilityOf(cfg *config.Config) graph.Durability {
	if d := graph.Durability(cfg.Checkpoints.Durability); d != "" {
		return d
	}
	return DefaultDurability
}

// AgentConfig converts the file into an agent.Config over reg, store and
// models. A setting the file leaves out stays zero, so the agent's default
// applies (checkpoints.durability excepted: DefaultDurability). Problems
// the file parser cannot see (a retry policy for a capability the
// application does not have) are returned as a *config.Error naming the
// line.
func AgentConfig(cfg *config.Config, reg *capabilities.Registry, store checkpoint.Store, models llm.Models) (agent.Config, error) {
	l := cfg.Limits
	ac := agent.Config{
		Registry: reg,
		Store:    store,
		Models:   models,
		Nodes: nodes.Config{
			ClassifierMode:               nodes.ClassifierMode(cfg.Classifier.Mode),
			MaxConcurrentClassifications: l.MaxConcurrentClassifications,
			TaskExtraction:               nodes.TaskExtractionMode(cfg.ModelCalls.TaskExtraction),
			SelectAllWithinTokens:        cfg.ModelCalls.SelectAllWithinTokens,
			SeparateTaskAndSelection:     cfg.ModelCalls.TaskWithSelection != nil && !*cfg.ModelCalls.TaskWithSelection,
		},
		Limits: agent.Limits{
			MaxPlanningAttempts: l.MaxPlanningAttempts,
			MaxNodeSteps:        l.MaxNodeSteps,
			MaxTokensPerTurn:    l.MaxTokensPerTurn,
			MaxExecutionTime:    time.Duration(l.MaxExecutionTime),
		},
		RetryPolicy:             cfg.Retry.Default,
		Options:                 AgentOptions(cfg),
		Targets:                 AgentTargets(cfg),
		MaxConcurrency:          l.StepConcurrency,
		Durability:              DurabilityOf(cfg),
		ErrorNodeGrace:          time.Duration(l.ErrorNodeGrace),
		ErrorExplanationTimeout: time.Duration(l.ErrorExplanationTimeout),
		MaxArtifactBytes:        l.MaxArtifactBytes,
		Leases:                  agent.LeaseConfig{Owner: cfg.Server.LeaseOwner, TTL: time.Duration(cfg.Server.LeaseTTL)},
	}
	// The file's 0 forbids reclassification; the agent reads 0 as its
	// default and a negative value as none.
	if r := l.MaxReclassifications; r != nil {
		ac.Limits.MaxReclassifications = *r
		if *r == 0 {
			ac.Limits.MaxReclassifications = -1
		}
	}
	// approval.expires_after: 0 means never, which the agent spells with a
	// negative duration (its zero is its own default).
	if e := cfg.Approval.ExpiresAfter; e != nil {
		ac.ApprovalExpiry = time.Duration(*e)
		if *e == 0 {
			ac.ApprovalExpiry = -1
		}
	}
	// checkpoints.keep_intermediate: true keeps them for good, which the
	// agent spells with a negative duration; false and 0 are its default.
	if k := cfg.Checkpoints.KeepIntermediate; k != nil {
		ac.KeepIntermediate = time.Duration(k.For)
		if k.Forever {
			ac.KeepIntermediate = -1
		}
	}
	retried, problems := registeredNames(cfg, reg, "retry.capabilities.", cfg.Retry.Capabilities)
	for _, name := range retried {
		if ac.CapabilityRetry == nil {
			ac.CapabilityRetry = map[string]capabilities.RetryPolicy{}
		}
		p, _ := cfg.RetryPolicyFor(name)
		ac.CapabilityRetry[name] = p
	}
	ac.StepDeadline = time.Duration(cfg.Deadlines.Default)
	deadlined, more := registeredNames(cfg, reg, "deadlines.capabilities.", cfg.Deadlines.Capabilities)
	problems = append(problems, more...)
	for _, name := range deadlined {
		if ac.CapabilityDeadlines == nil {
			ac.CapabilityDeadlines = map[string]time.Duration{}
		}
		ac.CapabilityDeadlines[name] = time.Duration(cfg.Deadlines.Capabilities[name])
	}
	if len(problems) > 0 {
		return ac, &config.Error{File: cfg.Source(), Problems: problems}
	}
	return ac, nil
}

// Models builds the models of the file's roles. A role whose model cannot be
// built (an unknown provider, a missing API key variable) is reported with
// the line of its models.<role> key.
func Models(cfg *config.Config, lookupEnv func(string) (string, bool)) (llm.Models, error) {
	lc := LLMConfig(cfg)
	if len(lc.Roles) == 0 {
		return llm.None, nil
	}
	lc.LookupEnv = lookupEnv
	set, err := llm.New(lc)
	if err == nil {
		return set, nil
	}
	return nil, llmConfigError(cfg, err)
}

// llmConfigError turns llm's joined *ConfigErrors into config problems with
// lines; other errors pass unchanged.
func llmConfigError(cfg *config.Config, err error) error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var problems []config.Problem
	for _, e := range list {
		var ce *llm.ConfigError
		if !errors.As(e, &ce) {
			return err
		}
		key := "models." + string(ce.Role)
		line := cfg.Line(key)
		if ce.Field != "" {
			if l := cfg.Line(key + "." + ce.Field); l > 0 {
				key, line = key+"."+ce.Field, l
			}
		}
		problems = append(problems, config.Problem{Line: line, Key: key, Problem: ce.Problem})
	}
	return &config.Error{File: cfg.Source(), Problems: problems}
}

// ServerConfig converts the file's server section (and envKeys, the value
// of CAPGRAPH_API_KEYS, when set) into a server.Config for runner. A setting
// the file leaves out stays zero, so the server's default applies.
func ServerConfig(cfg *config.Config, runner agent.Runner, envKeys string, logger logging.Logger) (server.Config, error) {
	sc := server.Config{
		Runner:       runner,
		Addr:         cfg.Server.Addr,
		ParkAfter:    threshold(cfg.Server.Limits.ParkAfter),
		StatusFrames: server.StatusFrames(cfg.Server.StatusFrames),
		Logger:       logger,
		Limits: server.Limits{
			MaxBodyBytes: cfg.Server.MaxBodyBytes,
			// server.limits.max_concurrent_runs bounds the replica; a key
			// without its own max_concurrent_runs is bound by that alone.
			MaxTotalRuns:      cfg.Server.Limits.MaxConcurrentRuns,
			MaxConcurrentRuns: cfg.Server.Limits.MaxConcurrentRuns,
			RequestsPerMinute: cfg.Server.Limits.RequestsPerMinute,
			TurnTimeout:       time.Duration(cfg.Server.Limits.RunTimeout),
			MaxThreads:        cfg.Server.Limits.MaxThreads,
			MaxMetadataKeys:   cfg.Server.Limits.MaxMetadataKeys,
			MaxMetadataBytes:  cfg.Server.Limits.MaxMetadataBytes,
			MaxPageSize:       cfg.Server.Limits.MaxPageSize,
			BodyIdleTimeout:   time.Duration(cfg.Server.Limits.BodyIdleTimeout),
			DuplicateWindow:   threshold(cfg.Server.Limits.DuplicateWindow),
			DetachGrace:       threshold(cfg.Server.Limits.DetachGrace),
			RunRetention:      time.Duration(cfg.Server.Limits.RunRetention),
			ThreadRetention:   time.Duration(cfg.Server.Limits.ThreadRetention),
		},
		Auth: server.Auth{
			CORSOrigins:    cfg.Server.CORSOrigins,
			AllowedHosts:   cfg.Server.AllowedHosts,
			FrameAncestors: cfg.Server.FrameAncestors,
		},
		Artifacts: server.Artifacts{
			PublicURL:      cfg.Server.PublicURL,
			ArtifactURLTTL: time.Duration(cfg.Server.ArtifactURLTTL),
		},
	}
	if cfg.Server.ArtifactSecret != "" {
		sc.ArtifactSecret = []byte(cfg.Server.ArtifactSecret)
	}
	sc.MCPAnswersApprovals = cfg.Approval.MCPAnswers
	page, err := pageConfig(cfg)
	if err != nil {
		return sc, err
	}
	sc.Page = page
	// Without run_timeout a run is bounded by the turn's limit (when the
	// file sets one: the server's default equals the agent's).
	if sc.TurnTimeout == 0 {
		sc.TurnTimeout = time.Duration(cfg.Limits.MaxExecutionTime)
	}
	// A Chat Completions approval token lives as long as an approval. When
	// approvals never expire the token must not either; otherwise the
	// agent's expiry, carried by every approval, bounds it.
	if e := cfg.Approval.ExpiresAfter; e != nil {
		sc.ApprovalTTL = time.Duration(*e)
		if *e == 0 {
			sc.ApprovalTTL = neverExpires
		}
	}
	if err := checkAllowedCapabilities(cfg, runner); err != nil {
		return sc, err
	}
	for _, k := range cfg.Server.APIKeys {
		digest := k.KeySHA256
		if k.Key != "" {
			digest = server.HashKey(k.Key)
		}
		sc.Principals = append(sc.Principals, server.Principal{
			Name: k.Name, KeySHA256: digest, Tenant: k.Tenant, TrustedFrontend: k.TrustedFrontend,
			AllowedCapabilities: k.AllowedCapabilities, MaxConcurrentRuns: k.MaxConcurrentRuns,
			MayRaise: k.MayRaise, Admin: k.Admin, StatusFrames: server.StatusFrames(k.StatusFrames),
		})
	}
	if envKeys != "" {
		ps, err := server.ParseAPIKeys(envKeys)
		if err != nil {
			return sc, err // a *server.ConfigError naming CAPGRAPH_API_KEYS
		}
		sc.Principals = append(sc.Principals, ps...)
	}
	return sc, nil
}

// Logger builds the logger the file configures, writing to w.
func Logger(cfg *config.Config, w interface{ Write([]byte) (int, error) }) (logging.Logger, error) {
	return logrusadapter.New(logrusadapter.Config{Level: cfg.Logging.Level, Format: logrusadapter.Format(cfg.Logging.Format), Output: w})
}

// checkAllowedCapabilities reports allowed_capabilities naming no
// capability of the agent (when the runner says which it has): the agent
// would refuse every turn of that key.
func checkAllowedCapabilities(cfg *config.Config, runner agent.Runner) error {
	rc, ok := runner.(interface{ RouterConfig() router.Config })
	if !ok {
		return nil
	}
	have := rc.RouterConfig().Capabilities
	var problems []config.Problem
	for i, k := range cfg.Server.APIKeys {
		for j, name := range k.AllowedCapabilities {
			if name == state.NodeRespond || name == state.NodeClarify || slices.Contains(have, name) {
				continue
			}
			key := fmt.Sprintf("server.api_keys[%d].allowed_capabilities[%d]", i, j)
			line := cfg.Line(key)
			if line == 0 {
				line = cfg.Line(fmt.Sprintf("server.api_keys[%d].allowed_capabilities", i))
			}
			problems = append(problems, config.Problem{Line: line, Key: key,
				Problem: fmt.Sprintf("%q is not a capability of this agent (it has: %s)", name, strings.Join(have, ", "))})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &config.Error{File: cfg.Source(), Problems: problems}
}

// threshold is a config.Threshold as the server.Config duration it sets
// (park_after, duplicate_window, detach_grace): "never" is negative (the
// server's "off"), 0 keeps the server's default.
func threshold(t config.Threshold) time.Duration {
	if t.Never {
		return -1
	}
	return time.Duration(t.After)
}

// pageConfig is server.page for the built-in page: the name, the logo
// file read, the zone loaded (config.Validate checked them).
func pageConfig(cfg *config.Config) (server.Page, error) {
	p := cfg.Server.Page
	out := server.Page{Name: p.Name}
	if p.TimeZone != "" {
		loc, err := time.LoadLocation(p.TimeZone)
		if err != nil {
			return out, &config.Error{File: cfg.Source(), Problems: []config.Problem{{Line: cfg.Line("server.page.time_zone"), Key: "server.page.time_zone",
				Problem: fmt.Sprintf("%q is not a time zone this machine knows: %v", p.TimeZone, err)}}}
		}
		out.TimeZone = loc
	}
	if p.Logo != "" {
		b, err := os.ReadFile(p.Logo)
		if err != nil {
			return out, &config.Error{File: cfg.Source(), Problems: []config.Problem{{Line: cfg.Line("server.page.logo"), Key: "server.page.logo",
				Problem: fmt.Sprintf("the logo cannot be read: %v", err)}}}
		}
		out.Logo, out.LogoType = b, config.LogoTypes[strings.ToLower(filepath.Ext(p.Logo))]
	}
	return out, nil
}

// Schedules converts the file's schedules (sorted by name). With reg, a
// schedule's allowed capability that is not registered is a problem named
// with its line; without, the names are not checked (listing schedules
// needs no capabilities).
func Schedules(cfg *config.Config, reg *capabilities.Registry) ([]schedule.Schedule, error) {
	names := make([]string, 0, len(cfg.Schedules))
	for name := range cfg.Schedules {
		names = append(names, name)
	}
	sort.Strings(names)
	var (
		out      []schedule.Schedule
		problems []config.Problem
	)
	for _, name := range names {
		c := cfg.Schedules[name]
		key := "schedules." + name
		when, err := spec.Parse(c.Cron, c.Timezone)
		if err != nil {
			problems = append(problems, config.Problem{Line: cfg.Line(key), Key: key, Problem: err.Error()})
			continue
		}
		s := schedule.Schedule{Name: name, When: when, Input: c.Input, KeepThread: c.Thread == config.ScheduleThreadKeep,
			Writes: c.Writes, WebhookURL: c.WebhookURL, Principal: c.Principal, Tenant: c.Tenant}
		if len(c.AllowedCapabilities) > 0 {
			s.AllowedCapabilities = append([]string(nil), c.AllowedCapabilities...)
		}
		for i, cap := range s.AllowedCapabilities {
			if reg == nil {
				break
			}
			if _, ok := reg.Get(cap); !ok {
				k := fmt.Sprintf("%s.allowed_capabilities[%d]", key, i)
				problems = append(problems, config.Problem{Line: cfg.Line(k), Key: k,
					Problem: fmt.Sprintf("no capability %q is registered (registered: %v)", cap, reg.Names())})
			}
		}
		out = append(out, s)
	}
	if len(problems) > 0 {
		return out, &config.Error{File: cfg.Source(), Problems: problems}
	}
	return out, nil
}

// Triggers converts the file's triggers (sorted by name), reading each
// secret from the environment variable its secret_env names. A secret not
// set or shorter than 16 bytes, and with reg an allowed capability that is
// not registered, is a problem named with its line.
func Triggers(cfg *config.Config, reg *capabilities.Registry, getenv func(string) string) ([]trigger.Trigger, error) {
	names := make([]string, 0, len(cfg.Triggers))
	for name := range cfg.Triggers {
		names = append(names, name)
	}
	sort.Strings(names)
	var (
		out      []trigger.Trigger
		problems []config.Problem
	)
	bad := func(key, format string, args ...any) {
		problems = append(problems, config.Problem{Line: cfg.Line(key), Key: key, Problem: fmt.Sprintf(format, args...)})
	}
	for _, name := range names {
		c := cfg.Triggers[name]
		key := "triggers." + name
		secret := getenv(c.SecretEnv)
		switch {
		case secret == "":
			bad(key+".secret_env", "the environment variable %s is not set (it holds the trigger's HMAC secret)", c.SecretEnv)
		case len(secret) < 16:
			bad(key+".secret_env", "the secret in %s has %d bytes; use at least 16", c.SecretEnv, len(secret))
		}
		t := trigger.Trigger{Name: name, Secret: []byte(secret), Input: c.Input, Writes: c.Writes, RatePerMinute: c.RatePerMinute,
			Owner: trigger.Owner{Tenant: c.Tenant, Principal: c.Principal}}
		if len(c.AllowedCapabilities) > 0 {
			t.AllowedCapabilities = append([]string(nil), c.AllowedCapabilities...)
		}
		for i, cap := range t.AllowedCapabilities {
			if reg == nil {
				break
			}
			if _, ok := reg.Get(cap); !ok {
				bad(fmt.Sprintf("%s.allowed_capabilities[%d]", key, i), "no capability %q is registered (registered: %v)", cap, reg.Names())
			}
		}
		out = append(out, t)
	}
	if len(problems) > 0 {
		return out, &config.Error{File: cfg.Source(), Problems: problems}
	}
	return out, nil
}

// registeredNames returns the keys of m, sorted, that name a registered
// capability, and a problem (at key prefix+name) for each that does not.
func registeredNames[V any](cfg *config.Config, reg *capabilities.Registry, prefix string, m map[string]V) ([]string, []config.Problem) {
	var known []string
	var problems []config.Problem
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if _, ok := reg.Get(name); !ok {
			key := prefix + name
			problems = append(problems, config.Problem{Line: cfg.Line(key), Key: key,
				Problem: fmt.Sprintf("no capability %q is registered (registered: %v)", name, reg.Names())})
			continue
		}
		known = append(known, name)
	}
	return known, problems
}
