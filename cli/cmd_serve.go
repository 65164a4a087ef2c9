package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/capgraph/capgraph/server"
	"github.com/capgraph/capgraph/wiring"
)

// cmdServe starts the HTTP server.
func cmdServe(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--addr HOST:PORT] [--resume=true|false]")
	addr := fs.String("addr", "", "listen address (default server.addr, 127.0.0.1:8080)")
	resume := fs.Bool("resume", true, "finish runs a crash or shutdown stopped: at start (SQLite, PostgreSQL) and every lease TTL (PostgreSQL, taking over from replicas that died)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "serve", Problem: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	c.logRuns = true
	if _, err := c.buildAgent(ctx, true); err != nil {
		return err
	}
	// A serving process's collector: GOGC 400 unless the file or the
	// environment says otherwise, within 90 % of a container's memory.
	wiring.RuntimeTuningOf(c.cfg, c.env.Getenv, wiring.ContainerMemory()).Apply()
	logger, err := c.rt.Logger(c.env.Stderr)
	if err != nil {
		return err
	}
	for _, w := range c.cfg.Warnings() {
		logger.Warn("configuration: "+w.Problem, "key", w.Key, "line", w.Line)
	}
	sc, err := c.rt.ServerConfig(ctx, logger)
	if err != nil {
		return err
	}
	sc.Examples = c.app.Examples
	if sc.Page.Name == "" {
		sc.Page.Name = c.app.Name // the application's own page
	}
	if *addr != "" {
		sc.Addr = *addr
	}
	if sc.Addr == "" {
		sc.Addr = server.DefaultAddr
	}
	if !*resume {
		sc.RecoverEvery = 0
	}
	srv, err := server.New(sc)
	var se *server.ConfigError
	if *addr != "" && errors.As(err, &se) && se.Field == "Addr" {
		return fmt.Errorf("--addr %s %s", se.Reason, wiring.NoKeysHint)
	}
	if err != nil {
		return wiring.ServerError(c.cfg, err)
	}
	ln, err := net.Listen("tcp", sc.Addr)
	if err != nil {
		return c.listenError(sc.Addr, err)
	}
	metricsAddr, err := c.rt.ServeMetrics(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	if tel, _ := c.rt.Telemetry(ctx); tel != nil {
		switch {
		case metricsAddr != "":
			c.serveFacts = append(c.serveFacts, fact{"metrics", "http://" + metricsAddr + "/metrics"})
		case tel.Metrics != nil:
			c.serveFacts = append(c.serveFacts, fact{"metrics", "http://" + ln.Addr().String() + "/metrics (like the API: with a key when keys are set)"})
		}
		if tel.Tracing {
			c.serveFacts = append(c.serveFacts, fact{"traces", "exported over OTLP (telemetry.traces, OTEL_*)"})
		}
	}
	sched, err := c.rt.Scheduler(ctx, logger, srv)
	if err != nil {
		ln.Close()
		return err
	}
	if sched != nil {
		c.serveFacts = append(c.serveFacts, fact{"schedules", fmt.Sprintf("%d (list them: %s schedules)", len(c.cfg.Schedules), c.env.Program)})
		go sched.Run(ctx) //nolint:errcheck // ends with ctx
	}
	c.banner(ctx, ln.Addr().String(), len(sc.Principals))
	if *resume && c.spec.Kind != wiring.StoreMemory {
		// The runs finish in the background, as server runs (audited,
		// followable), while the server already answers. Each is claimed
		// under its thread's lease, so a run another replica holds is left
		// to it.
		recoverRuns := srv.RecoverRuns
		if c.spec.Kind != wiring.StorePostgres {
			// This process alone owns the store: nobody else would take
			// what the first pass leaves, so wait for room and take all.
			recoverRuns = srv.RecoverAllRuns
		}
		go func() {
			threads, err := recoverRuns(ctx)
			if len(threads) > 0 {
				logger.Info("resumed runs stopped by a crash or shutdown", "threads", threads)
			}
			if err != nil && ctx.Err() == nil {
				logger.Warn("resuming stopped runs", "error", err)
			}
		}()
	}
	err = srv.Serve(ctx, ln)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintln(c.env.Stderr, "server stopped")
	return nil
}

// listenError says what to do when the address cannot be had: which flag
// and which key choose another (another program holds the port, or the
// address is not this machine's).
func (c *cmdEnv) listenError(addr string, err error) error {
	file := DefaultConfigFile
	if c.cfgPath != "" {
		file = c.cfgPath
	}
	other := "127.0.0.1:8081"
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if p, err := strconv.Atoi(port); err == nil && p > 0 && p < 65535 {
			other = net.JoinHostPort(host, strconv.Itoa(p+1))
		}
	}
	why := err.Error()
	if errors.Is(err, syscall.EADDRINUSE) {
		why = "the port is in use (another " + c.env.Program + " serve, or another program)"
	}
	return fmt.Errorf("cannot listen on %s: %s; choose another address with --addr %s, or with server.addr in %s", addr, why, other, file)
}

func (c *cmdEnv) banner(ctx context.Context, addr string, keys int) {
	base := "http://" + addr
	// Written at once: a reader (a script, a test) that sees its first line sees it all.
	w := new(strings.Builder)
	defer func() { io.WriteString(c.env.Stdout, w.String()) }()
	mode := "offline mode: no LLM configured"
	if !c.offline() {
		mode = "with the configured models"
	}
	fmt.Fprintf(w, "%s is serving (%s)\n", c.app.Name, mode)
	facts := []fact{
		{"web page", base + "/"},
		{"OpenAI-compatible base URL", fmt.Sprintf("%s/v1   (model %q)", base, server.DefaultModel)},
		{"native API", base + "/api"},
		{"MCP server (streamable HTTP)", base + "/mcp"},
	}
	facts = append(facts, c.facts(ctx)...)
	facts = append(facts, c.serveFacts...)
	apiKeys := "none: only clients on this machine (loopback) can connect"
	if keys > 0 {
		apiKeys = fmt.Sprintf("%d (server.api_keys, %s); every request needs one", keys, wiring.EnvAPIKeys)
	}
	facts = append(facts, fact{"API keys", apiKeys})
	writeFacts(w, "  ", facts, len("MCP server (streamable HTTP):"))
	auth := ""
	if keys > 0 {
		auth = ` -H "Authorization: Bearer $KEY"`
	}
	q := "What is the beam current?"
	if len(c.app.Examples) > 0 {
		q = c.app.Examples[0]
	}
	fmt.Fprintf(w, "Try:\n  curl -s %s/v1/chat/completions%s -H 'Content-Type: application/json' \\\n    -d '{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}'\n", base, auth, server.DefaultModel, q)
	fmt.Fprintln(w, "Press Ctrl-C to stop.")
}
