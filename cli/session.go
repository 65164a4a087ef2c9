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
	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/mcp"
)

// cmdEnv is one command's environment: it loads the configuration, opens
// the store and builds the agent on demand, so commands that need less
// (config check, capabilities) open nothing they do not use.
type cmdEnv struct {
	app    App
	env    Env
	global globalFlags
	name   string

	cfg     *config.Config
	spec    StoreSpec
	store   checkpoint.Store
	closers []func() error
	reg     *capabilities.Registry
	models  llm.Models
	agent   *agent.Agent
	mcp     *mcp.Set // the MCP servers the registry started
}

func (c *cmdEnv) close() {
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
	c.cfg = cfg
	return cfg, nil
}

// registry builds the application's capabilities once, with the tools of
// the configured MCP servers (started here; stopped by close).
func (c *cmdEnv) registry(ctx context.Context) (*capabilities.Registry, error) {
	if c.reg != nil {
		return c.reg, nil
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	caps, err := c.app.Capabilities(cfg)
	if err != nil {
		return nil, fmt.Errorf("capabilities: %w", err)
	}
	reg := capabilities.NewRegistry()
	if err := reg.Register(caps...); err != nil {
		return nil, err
	}
	if err := c.registerMCP(ctx, cfg, reg); err != nil {
		return nil, err
	}
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	c.reg = reg
	return reg, nil
}

// storeSpec resolves the store: --store, else the file's store, else the
// default SQLite file.
func (c *cmdEnv) storeSpec() (StoreSpec, error) {
	cfg, err := c.config()
	if err != nil {
		return StoreSpec{}, err
	}
	v := c.global.store
	if v == "" {
		v = cfg.Store
	}
	return ParseStore(v, c.env.Getenv)
}

// openStore opens the store once.
func (c *cmdEnv) openStore(ctx context.Context) (checkpoint.Store, error) {
	if c.store != nil {
		return c.store, nil
	}
	spec, err := c.storeSpec()
	if err != nil {
		return nil, err
	}
	st, closeFn, err := OpenStore(ctx, spec)
	if err != nil {
		return nil, err
	}
	c.spec, c.store = spec, st
	c.closers = append(c.closers, closeFn)
	return st, nil
}

// buildAgent builds the agent over the configured store (or, with
// persistent false, over a throwaway memory store).
func (c *cmdEnv) buildAgent(ctx context.Context, persistent bool) (*agent.Agent, error) {
	if c.agent != nil {
		return c.agent, nil
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	reg, err := c.registry(ctx)
	if err != nil {
		return nil, err
	}
	models, err := Models(cfg, c.env.lookupEnv)
	if err != nil {
		return nil, err
	}
	var st checkpoint.Store = memory.New()
	if persistent {
		if st, err = c.openStore(ctx); err != nil {
			return nil, err
		}
	}
	ac, err := AgentConfig(cfg, reg, st, models)
	if err != nil {
		return nil, err
	}
	a, err := agent.New(ac)
	if err != nil {
		return nil, err
	}
	c.models, c.agent = models, a
	return a, nil
}

// offline reports whether no role has a model.
func (c *cmdEnv) offline() bool {
	_, ok := c.models.For(llm.RoleDefault)
	if ok {
		return false
	}
	for _, r := range llm.Roles {
		if _, ok := c.models.For(r); ok {
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
