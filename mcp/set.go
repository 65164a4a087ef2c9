package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/logging"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure Connect.
type Options struct {
	// Taken reports capability names already in use (the application's);
	// a tool whose name is taken gets a suffix. nil means none.
	Taken func(name string) bool
	// Logger receives start-ups, restarts and the servers' stderr (debug).
	Logger logging.Logger
	// LookupEnv reads capgraph's environment: header values and the
	// InheritedEnv variables. nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Now is the clock of restart waits; nil means time.Now.
	Now func() time.Time
}

// Set is the connected MCP servers and their tools as capabilities. Close
// it to stop them.
type Set struct {
	servers []*server
	tools   []*Tool
	skipped []*ServerError
}

// ServerError is a server that could not be started or listed.
type ServerError struct {
	Server string
	Err    error
}

func (e *ServerError) Error() string {
	return fmt.Sprintf("MCP server %q: %v", e.Server, e.Err)
}

func (e *ServerError) Unwrap() error { return e.Err }

// ToolNameError is a tool the configuration names that the server does not
// have (a typo there would silently drop a safety setting).
type ToolNameError struct {
	Server string
	// Key is the configuration key naming it: read_only_tools,
	// include_tools, exclude_tools or tools.
	Key   string
	Tool  string
	Known []string
}

func (e *ToolNameError) Error() string {
	return fmt.Sprintf("MCP server %q has no tool %q (listed in %s; its tools: %s)", e.Server, e.Tool, e.Key, strings.Join(e.Known, ", "))
}

// Connect starts every configured server (stdio) or connects to it (http),
// lists its tools and makes each a capability (see Tool). Servers start
// concurrently. A server that cannot start fails Connect with a
// *ServerError naming it — unless it is Optional: then it is left out and
// reported by Skipped. A tool named in the configuration that the server
// does not have fails Connect with a *ToolNameError (inside the
// *ServerError), optional or not. On failure every started server is
// stopped again.
func Connect(ctx context.Context, servers []ServerConfig, opts Options) (*Set, error) {
	if opts.Logger == nil {
		opts.Logger = logging.Nop()
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	taken := opts.Taken
	if taken == nil {
		taken = func(string) bool { return false }
	}
	prefixes := map[string]string{}
	for _, cfg := range servers {
		p := Prefix(cfg)
		if other, dup := prefixes[p]; dup {
			return nil, &ServerError{Server: cfg.Name, Err: fmt.Errorf("its prefix %q is also the prefix of the server %q; give one of them another prefix", p, other)}
		}
		prefixes[p] = cfg.Name
	}
	set := &Set{}
	lists := make([][]*sdk.Tool, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, cfg := range servers {
		s := &server{cfg: cfg, log: opts.Logger, now: opts.Now, lookupEnv: opts.LookupEnv}
		set.servers = append(set.servers, s)
		wg.Go(func() { lists[i], errs[i] = s.start(ctx) })
	}
	wg.Wait()
	var fail []error
	kept := set.servers[:0]
	for i, s := range set.servers {
		err := errs[i]
		var tn *ToolNameError
		switch {
		case err == nil:
			kept = append(kept, s)
			continue
		case s.cfg.Optional && !errors.As(err, &tn) && ctx.Err() == nil:
			s.log.Warn("MCP server: not started; its tools are missing", "server", s.cfg.Name, "error", err)
			set.skipped = append(set.skipped, &ServerError{Server: s.cfg.Name, Err: err})
		default:
			fail = append(fail, &ServerError{Server: s.cfg.Name, Err: err})
		}
		_ = s.close()
	}
	set.servers = kept
	if len(fail) > 0 {
		_ = set.Close()
		return nil, errors.Join(fail...)
	}
	used := map[string]bool{}
	n := names{taken: taken}
	for i, s := range servers {
		if errs[i] != nil {
			continue
		}
		srv := set.byName(s.Name)
		prefix := Prefix(s)
		for _, t := range lists[i] {
			name := n.unique(CapabilityName(prefix, t.Name), used)
			used[name] = true
			tool, err := newTool(srv, t, name)
			if err != nil {
				_ = set.Close()
				return nil, &ServerError{Server: s.Name, Err: err}
			}
			set.tools = append(set.tools, tool)
		}
	}
	return set, nil
}

func (s *Set) byName(name string) *server {
	for _, srv := range s.servers {
		if srv.cfg.Name == name {
			return srv
		}
	}
	return nil
}

// start connects for the first time and lists the tools that become
// capabilities, sorted by name (so names and their suffixes are stable).
func (s *server) start(ctx context.Context) ([]*sdk.Tool, error) {
	c, err := s.session(ctx)
	if err != nil {
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if last != "" {
			return nil, errors.New(last)
		}
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, s.cfg.connectTimeout())
	defer cancel()
	var all []*sdk.Tool
	for t, err := range c.sess.Tools(lctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing its tools: %w", err)
		}
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	known := make([]string, len(all))
	for i, t := range all {
		known[i] = t.Name
	}
	check := func(key string, list []string) error {
		for _, n := range list {
			if !slices.Contains(known, n) {
				return &ToolNameError{Server: s.cfg.Name, Key: key, Tool: n, Known: known}
			}
		}
		return nil
	}
	toolKeys := make([]string, 0, len(s.cfg.Tools))
	for k := range s.cfg.Tools {
		toolKeys = append(toolKeys, k)
	}
	slices.Sort(toolKeys)
	for _, c := range []struct {
		key  string
		list []string
	}{{"read_only_tools", s.cfg.ReadOnlyTools}, {"include_tools", s.cfg.IncludeTools}, {"exclude_tools", s.cfg.ExcludeTools}, {"tools", toolKeys}} {
		if err := check(c.key, c.list); err != nil {
			return nil, err
		}
	}
	var out []*sdk.Tool
	for _, t := range all {
		if len(s.cfg.IncludeTools) > 0 && !slices.Contains(s.cfg.IncludeTools, t.Name) || slices.Contains(s.cfg.ExcludeTools, t.Name) {
			continue
		}
		out = append(out, t)
	}
	s.log.Info("MCP server: started", "server", s.cfg.Name, "transport", string(s.cfg.transport()), "tools", len(out))
	return out, nil
}

// Capabilities returns a capability for every tool, servers in
// configuration order, tools by name.
func (s *Set) Capabilities() []capabilities.Capability {
	out := make([]capabilities.Capability, len(s.tools))
	for i, t := range s.tools {
		out[i] = t
	}
	return out
}

// Tools returns the tools as their own type.
func (s *Set) Tools() []*Tool { return slices.Clone(s.tools) }

// Skipped lists the optional servers that could not be started.
func (s *Set) Skipped() []*ServerError { return slices.Clone(s.skipped) }

// ServerInfo describes a connected server.
type ServerInfo struct {
	Name      string
	Transport Transport
	// Target is the command line (stdio) or the URL (http).
	Target string
	// PID is the stdio server's process id while it runs, else 0.
	PID int
	// Restarts counts restarts and reconnections since Connect.
	Restarts int
	// Tools are the capabilities of its tools, by name.
	Tools []*Tool
}

// Servers describes the connected servers, in configuration order.
func (s *Set) Servers() []ServerInfo {
	out := make([]ServerInfo, 0, len(s.servers))
	for _, srv := range s.servers {
		info := ServerInfo{Name: srv.cfg.Name, Transport: srv.cfg.transport(), Target: srv.cfg.URL}
		if info.Transport == TransportStdio {
			info.Target = strings.Join(append([]string{srv.cfg.Command}, srv.cfg.Args...), " ")
		}
		srv.mu.Lock()
		if srv.proc != nil && srv.proc.Process != nil {
			info.PID = srv.proc.Process.Pid
		}
		info.Restarts = srv.restarts
		srv.mu.Unlock()
		for _, t := range s.tools {
			if t.srv == srv {
				info.Tools = append(info.Tools, t)
			}
		}
		out = append(out, info)
	}
	return out
}

// Close stops every server (a stdio server with every process it
// started) and waits for them. Calls made after Close fail.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	errs := make([]error, len(s.servers))
	var wg sync.WaitGroup
	for i, srv := range s.servers {
		wg.Go(func() {
			if err := srv.close(); err != nil {
				errs[i] = &ServerError{Server: srv.cfg.Name, Err: err}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
