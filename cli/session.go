package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/wiring"
)

// cmdEnv is one command's environment: it loads the configuration and
// builds the runtime (package wiring) over it, which opens the store and
// builds the agent on demand, so commands that need less (config check,
// capabilities) open nothing they do not use.
type cmdEnv struct {
	app    App
	env    Env
	global globalFlags
	name   string

	cfg *config.Config
	// cfgPath is the file cfg was loaded from ("" : the built-in defaults).
	cfgPath string
	rt      *wiring.Runtime
	// spec is the store in use, once the store is opened.
	spec    wiring.StoreSpec
	closers []func() error
	// logRuns logs each run's significant events (serve).
	logRuns bool
	// serveFacts are more lines of serve's banner (metrics, traces).
	serveFacts []fact
}

func (c *cmdEnv) close() {
	if c.rt != nil {
		c.closers = append([]func() error{c.rt.Close}, c.closers...)
	}
	for i := len(c.closers) - 1; i >= 0; i-- {
		if err := c.closers[i](); err != nil {
			fmt.Fprintf(c.env.Stderr, "%s: closing: %v\n", c.app.Name, err)
		}
	}
	c.closers = nil
}

// configPath returns the file to read: --config, else capgraph.yaml when it
// exists, else "" (the defaults).
func (c *cmdEnv) configPath() (string, error) {
	if c.global.config != "" {
		return c.env.path(c.global.config), nil
	}
	p := c.env.path(DefaultConfigFile)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return "", nil
}

// config loads the configuration once.
func (c *cmdEnv) config() (*config.Config, error) {
	if c.cfg != nil {
		return c.cfg, nil
	}
	p, err := c.configPath()
	if err != nil {
		return nil, err
	}
	if p == "" {
		c.cfg = config.Default()
		return c.cfg, nil
	}
	cfg, err := config.Load(p)
	if err != nil {
		return nil, err
	}
	c.cfg, c.cfgPath = cfg, p
	return cfg, nil
}

// runtime builds the runtime over the configuration once. store, when set,
// replaces --store and the file's store.
func (c *cmdEnv) runtime(store string) (*wiring.Runtime, error) {
	if c.rt != nil {
		return c.rt, nil
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	if store == "" {
		store = c.global.store
	}
	logger, err := wiring.Logger(cfg, c.env.Stderr)
	if err != nil {
		return nil, err
	}
	rt, err := wiring.New(cfg, wiring.App{Name: c.app.Name, Capabilities: c.app.Capabilities},
		wiring.Options{Store: store, Getenv: c.env.Getenv, Dir: c.env.Dir, Logger: logger, LogRuns: c.logRuns})
	if err != nil {
		return nil, err
	}
	c.rt = rt
	return rt, nil
}

// registry builds the application's capabilities once.
func (c *cmdEnv) registry(ctx context.Context) (*capabilities.Registry, error) {
	rt, err := c.runtime("")
	if err != nil {
		return nil, err
	}
	return rt.Registry(ctx)
}

// openStore opens the store once.
func (c *cmdEnv) openStore(ctx context.Context) (checkpoint.Store, error) {
	rt, err := c.runtime("")
	if err != nil {
		return nil, err
	}
	st, err := rt.Store(ctx)
	if err != nil {
		return nil, err
	}
	c.spec, _ = rt.StoreSpec()
	return st, nil
}

// buildAgent builds the agent over the configured store (or, with
// persistent false, over a throwaway memory store).
func (c *cmdEnv) buildAgent(ctx context.Context, persistent bool) (*agent.Agent, error) {
	store := ""
	if !persistent {
		store = config.StoreMemory
	}
	rt, err := c.runtime(store)
	if err != nil {
		return nil, err
	}
	a, err := rt.Agent(ctx)
	if err != nil {
		return nil, err
	}
	c.spec, _ = rt.StoreSpec()
	return a, nil
}

// offline reports whether no role has a model.
func (c *cmdEnv) offline() bool {
	models, err := c.rt.Models()
	if err != nil {
		return true
	}
	for _, r := range llm.Roles() {
		if _, ok := models.For(r); ok {
			return false
		}
	}
	return true
}

// who names the local user in approvals and audit records ("cli:alice").
func (c *cmdEnv) who() string {
	u := c.env.Getenv("USER")
	if u == "" {
		u = c.env.Getenv("USERNAME")
	}
	if u == "" {
		u = "local"
	}
	return "cli:" + u
}
