package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/logging"
	"github.com/capgraph/capgraph/server"
)

// resumeWindow: runs stopped longer ago than this are left alone at start
// (whoever asked has long given up); they can still be resumed explicitly.
const resumeWindow = 24 * time.Hour

// maxResumed bounds the runs resumed at start.
const maxResumed = 32

// cmdServe starts the HTTP server.
func cmdServe(ctx context.Context, c *cmdEnv, args []string) error {
	fs := c.newFlags("[--addr HOST:PORT] [--resume=true|false]")
	addr := fs.String("addr", "", "listen address (default server.addr, 127.0.0.1:8080)")
	resume := fs.Bool("resume", true, "on start, finish runs a crash or shutdown stopped (SQLite store only)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Command: "serve", Problem: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	a, err := c.buildAgent(ctx, true)
	if err != nil {
		return err
	}
	logger, err := Logger(c.cfg, c.env.Stderr)
	if err != nil {
		return err
	}
	sc, err := ServerConfig(c.cfg, a, c.env.Getenv("CAPGRAPH_API_KEYS"), logger)
	if err != nil {
		return err
	}
	if *addr != "" {
		sc.Addr = *addr
	}
	if sc.Addr == "" {
		sc.Addr = server.DefaultAddr
	}
	srv, err := server.New(sc)
	if err != nil {
		return err
	}
	if n := c.cfg.Server.Limits.RequestsPerMinute; n > 0 {
		logger.Warn("server.limits.requests_per_minute is not enforced by this server yet", "line", c.cfg.Line("server.limits.requests_per_minute"), "value", n)
	}
	ln, err := net.Listen("tcp", sc.Addr)
	if err != nil {
		return err
	}
	c.banner(ln.Addr().String(), len(sc.Principals) > 0)
	if *resume && c.spec.Kind == StoreSQLite {
		go func() {
			n, err := resumeStopped(ctx, c.store, a, c.env.Now, logger)
			if err != nil && ctx.Err() == nil {
				logger.Warn("resuming stopped runs", "error", err)
			}
			if n > 0 {
				logger.Info("resumed runs stopped by a crash or shutdown", "runs", n)
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

func (c *cmdEnv) banner(addr string, keys bool) {
	base := "http://" + addr
	w := c.env.Stdout
	mode := "offline mode: no LLM configured"
	if !c.offline() {
		mode = "with the configured models"
	}
	fmt.Fprintf(w, "%s is serving (%s)\n", c.app.Name, mode)
	fmt.Fprintf(w, "  web page:                     %s/\n", base)
	fmt.Fprintf(w, "  OpenAI-compatible base URL:   %s/v1   (model %q)\n", base, server.DefaultModel)
	fmt.Fprintf(w, "  native API:                   %s/api\n", base)
	fmt.Fprintf(w, "  store:                        %s\n", c.spec)
	auth := ""
	if keys {
		auth = ` -H "Authorization: Bearer $KEY"`
	}
	q := "What is the beam current?"
	if len(c.app.Examples) > 0 {
		q = c.app.Examples[0]
	}
	fmt.Fprintf(w, "Try:\n  curl -s %s/v1/chat/completions%s -H 'Content-Type: application/json' \\\n    -d '{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}'\n", base, auth, server.DefaultModel, q)
	fmt.Fprintln(w, "Press Ctrl-C to stop.")
}

// resumeStopped finishes the runs that a crash or a shutdown stopped between
// two steps (agent.RunCanceled): the agent resumes them from their last
// checkpoint, so no step that completed runs again. Runs waiting for an
// approval are left waiting. It returns how many runs it resumed.
func resumeStopped(ctx context.Context, st checkpoint.Store, a agent.Runner, now func() time.Time, log logging.Logger) (int, error) {
	threads, err := st.Threads(ctx, checkpoint.ThreadFilter{Limit: 1000})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range threads {
		if n >= maxResumed || ctx.Err() != nil {
			break
		}
		if now().Sub(t.Updated) > resumeWindow {
			break // newest first: the rest are older
		}
		_, status, err := a.State(ctx, t.ThreadID)
		if err != nil || status != agent.RunCanceled {
			continue
		}
		n++
		log.Info("resuming a stopped run", "thread", t.ThreadID)
		for e, err := range a.Resume(ctx, t.ThreadID, agent.Answer{}) {
			if err != nil {
				log.Warn("resumed run failed", "thread", t.ThreadID, "error", err)
				break
			}
			if e.Type == agent.EventDone {
				log.Info("resumed run ended", "thread", t.ThreadID, "status", e.Status)
			}
		}
	}
	return n, nil
}
