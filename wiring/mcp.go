package wiring

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/config"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/mcp"
)

// MCPServers converts the file's mcp_servers into the mcp package's
// configs, sorted by name (the file's validation has checked the values).
func MCPServers(cfg *config.Config) []mcp.ServerConfig {
	names := make([]string, 0, len(cfg.MCPServers))
	for n := range cfg.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]mcp.ServerConfig, 0, len(names))
	for _, n := range names {
		s := cfg.MCPServers[n]
		sc := mcp.ServerConfig{Name: n, Transport: mcp.Transport(s.Transport), Command: s.Command, Args: s.Args, Env: s.Env, Dir: s.Dir,
			URL: s.URL, HeadersEnv: s.HeadersEnv, Prefix: s.Prefix, Optional: s.Optional,
			Timeout: time.Duration(s.Timeout), ConnectTimeout: time.Duration(s.ConnectTimeout), MaxRestarts: s.MaxRestarts,
			ReadOnlyTools: s.ReadOnlyTools, IncludeTools: s.IncludeTools, ExcludeTools: s.ExcludeTools}
		if len(s.Tools) > 0 {
			sc.Tools = map[string]mcp.ToolConfig{}
			for tn, t := range s.Tools {
				sev, _ := capabilities.ParseSeverity(t.IsErrorSeverity)
				if t.IsErrorSeverity == "" {
					sev = capabilities.SeverityUnset
				}
				sc.Tools[tn] = mcp.ToolConfig{SideEffects: t.SideEffects, Idempotent: t.Idempotent, IsErrorSeverity: sev,
					Timeout: time.Duration(t.Timeout), Description: t.Description}
			}
		}
		out = append(out, sc)
	}
	return out
}

// ConnectMCP starts the file's MCP servers and returns their tools'
// capabilities, named apart from taken (the application's). A server that
// cannot start, or a tool name the file gets wrong, is a *config.Error
// naming the server's line. Close the set to stop the servers.
func ConnectMCP(ctx context.Context, cfg *config.Config, taken func(string) bool, lookupEnv func(string) (string, bool), logger logging.Logger) (*mcp.Set, error) {
	if len(cfg.MCPServers) == 0 {
		return &mcp.Set{}, nil
	}
	set, err := mcp.Connect(ctx, MCPServers(cfg), mcp.Options{Taken: taken, LookupEnv: lookupEnv, Logger: logger})
	if err != nil {
		return nil, mcpConfigError(cfg, err)
	}
	return set, nil
}

// mcpConfigError names the line of each server (or tool name) a start-up
// error is about.
func mcpConfigError(cfg *config.Config, err error) error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var problems []config.Problem
	for _, e := range list {
		var se *mcp.ServerError
		if !errors.As(e, &se) {
			return err
		}
		key := "mcp_servers." + se.Server
		var tn *mcp.ToolNameError
		if errors.As(e, &tn) {
			key += "." + tn.Key
			s := cfg.MCPServers[se.Server]
			switch tn.Key {
			case "tools":
				key += "." + tn.Tool
			case "read_only_tools":
				key = listItem(key, s.ReadOnlyTools, tn.Tool)
			case "include_tools":
				key = listItem(key, s.IncludeTools, tn.Tool)
			case "exclude_tools":
				key = listItem(key, s.ExcludeTools, tn.Tool)
			}
		}
		problems = append(problems, config.Problem{Line: lineOf(cfg, key), Key: key, Problem: oneLine(se.Err)})
	}
	return &config.Error{File: cfg.Source(), Problems: problems}
}

func listItem(key string, list []string, item string) string {
	if i := slices.Index(list, item); i >= 0 {
		return fmt.Sprintf("%s[%d]", key, i)
	}
	return key
}
