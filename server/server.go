package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/capgraph/capgraph/runstore"
	"github.com/capgraph/capgraph/server/internal/agui"
	"github.com/capgraph/capgraph/server/internal/apierror"
	"github.com/capgraph/capgraph/server/internal/approvaltoken"
	"github.com/capgraph/capgraph/server/internal/artifacts"
	"github.com/capgraph/capgraph/server/internal/crew"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
	"github.com/capgraph/capgraph/server/internal/mcphttp"
	"github.com/capgraph/capgraph/server/internal/native"
	"github.com/capgraph/capgraph/server/internal/openai"
	"github.com/capgraph/capgraph/server/internal/responses"
	"github.com/capgraph/capgraph/server/internal/transcripts"
)

// Server is capgraph's HTTP server. Create it with New, serve Handler on any
// listener or call Run, and stop it with Shutdown.
type Server struct {
	cfg       Config
	keys      *keyring
	threads   *threadIndex
	runs      *runManager
	approvals *approvaltoken.Store
	// features are the optional interfaces of the Agent (agent.go).
	features features
	counts   *threadCounts
	records  runstore.Store
	// cluster is the runs queue shared with other replicas (replicas.go);
	// nil with a store for one process.
	cluster *cluster
	limiter *rateLimiter
	// rates counts the requests of every replica (cluster only).
	rates runstore.RateCounter
	// transcripts names Chat Completions conversations without a chat id.
	transcripts *transcripts.Index
	// artifacts serves the artifact routes and links (artifacts.go).
	artifacts *artifacts.Routes
	// hosts are the names the server answers to (browser.go).
	hosts   *hostGuard
	handler http.Handler
	// next notes the threads with a recorded run waiting for the run on
	// the thread to end (answers.go).
	next nextRuns
	// background owns the server's goroutines besides the runs' agent
	// calls (package crew); Shutdown stops and joins them.
	background *crew.Crew
	// releases are the request keys being released (delivered).
	releases keyReleases

	mu   sync.Mutex
	http *http.Server
}

// New validates cfg and returns a Server.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	hosts, err := newHostGuard(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, keys: newKeyring(cfg.Principals), threads: newThreadIndex(), features: featuresOf(cfg.Runner), hosts: hosts, background: crew.New()}
	s.counts = newThreadCounts(cfg.MaxThreads)
	s.records = cfg.Runs
	if rs, ok := cfg.Runner.(RunRecorder); ok && s.records == nil {
		s.records = rs.RunStore()
	}
	if s.records == nil {
		return nil, &ConfigError{Field: "Runs", Reason: "required: the Runner keeps no run records (an *agent.Agent does, in its store); " +
			"set Config.Runs (memory.New() keeps them in this process only)"}
	}
	s.cluster = newCluster(s)
	s.counts.shared = s.cluster != nil
	s.runs = newRunManager(s)
	s.transcripts = transcripts.NewIndex(transcripts.IndexSize)
	s.limiter = newRateLimiter(cfg.RequestsPerMinute, cfg.Now)
	if s.cluster != nil && s.limiter != nil {
		s.rates, _ = s.records.(runstore.RateCounter)
	}
	s.approvals = approvaltoken.NewStore()
	s.artifacts = s.artifactRoutes()
	s.handler = s.routes()
	return s, nil
}

// Handler returns the server's HTTP handler (for httptest or an own
// http.Server). It enforces the body limit and authentication itself.
func (s *Server) Handler() http.Handler { return s.handler }

// Addr returns the configured listen address.
func (s *Server) Addr() string { return s.cfg.Addr }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		jsonreply.JSON(w, http.StatusOK, map[string]any{"status": "ok"})
	})
	oa := func(h http.HandlerFunc) http.HandlerFunc { return s.requireAuth(h, s.writeError) }
	openai.Routes(mux, s.chatCompletions(oa))
	responses.Routes(mux, s.responsesAPI(oa))

	native.Routes(mux, native.Deps{Turns: serverTurns{s}, Threads: serverNative{s}, Runs: serverNative{s}, Approvals: serverNative{s},
		TimeTravel: s.timeTravel(), Streams: s.nativeStreams(), MaxMessageBytes: s.cfg.MaxMessageBytes, Auth: oa})
	mux.HandleFunc("GET /api/audit", oa(s.handleAudit))
	mux.HandleFunc("GET /api/evaluations", oa(s.handleEvaluations))

	mux.HandleFunc("POST /agui", oa(agui.Handler(agui.Deps{Turns: serverTurns{s}, MaxMessages: s.cfg.MaxMessages, Now: s.cfg.Now,
		StreamWriteTimeout: s.cfg.StreamWriteTimeout, Heartbeat: s.cfg.Heartbeat})))
	mux.HandleFunc("GET /api/info", oa(s.handleInfo))
	if s.cfg.Metrics != nil {
		mux.Handle("GET /metrics", oa(s.cfg.Metrics.ServeHTTP))
	}
	if s.cfg.Triggers != nil {
		mux.Handle("POST /api/triggers/{name}", s.cfg.Triggers(s.startFor))
	}
	mcphttp.Routes(mux, mcphttp.Deps{Turns: serverTurns{s}, Auth: oa, Examples: s.cfg.Examples, MaxMessageBytes: s.cfg.MaxMessageBytes,
		Heartbeat: s.cfg.Heartbeat, Artifacts: s.artifacts.ForMCP, AnswerApprovals: s.cfg.MCPAnswersApprovals})
	s.artifacts.Register(mux, oa)
	if !s.cfg.DisableWebPage {
		s.pageRoutes(mux)
		mux.Handle(staticPattern, s.staticFiles(s.pageSecurity(webHandler())))
	}
	served := s.dispatch(mux)
	// The Host check comes first (a preflight too); the write check after
	// CORS, so a listed page can read why its request was refused.
	return s.observed(s.unreadBodies(s.recoverPanics(s.checkHost(s.cors(s.checkWrite(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			var whole time.Time
			if s.cfg.ReadTimeout > 0 {
				whole = time.Now().Add(s.cfg.ReadTimeout)
			}
			r.Body = http.MaxBytesReader(w, &idleBody{ReadCloser: r.Body, rc: http.NewResponseController(w),
				idle: s.cfg.BodyIdleTimeout, deadline: whole}, s.cfg.MaxBodyBytes)
		}
		served.ServeHTTP(w, r)
	})))))))
}

// Run listens on Config.Addr and serves until ctx is done or Shutdown is
// called; then it shuts down gracefully (bounded by 30 s).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln like Run. With Config.RecoverEvery set, it also
// recovers cut runs periodically (see RecoverRuns) while it serves. The
// loops it starts are the server's (Shutdown joins them); they stop when
// Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
	}
	s.mu.Lock()
	s.http = hs
	s.mu.Unlock()
	lctx, stop := context.WithCancel(ctx)
	var loops crew.Tally // this call's loops, joined when it returns
	loop := func(fn func(context.Context)) {
		loops.Add()
		if !s.background.Go(func(bctx context.Context) {
			defer loops.Done()
			ctx, cancel := context.WithCancel(lctx)
			defer cancel()
			defer context.AfterFunc(bctx, cancel)() // Shutdown stops it too
			fn(ctx)
		}) {
			loops.Done()
		}
	}
	defer func() { _ = loops.Wait(context.Background()) }()
	defer stop()
	switch {
	case s.cluster != nil:
		// Replicas: listen to the others, and claim from the queue
		// (which recovers cut runs too) unless recovery is off.
		loop(s.listenLoop)
		if s.cfg.RecoverEvery > 0 {
			loop(s.claimLoop)
		}
	case s.cfg.RecoverEvery > 0:
		loop(s.recoverLoop)
	}
	loop(s.pruneLoop)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }() // returns once hs is shut down (below)
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := s.Shutdown(sctx)
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		return err
	}
}

// Shutdown stops accepting runs, lets the running ones go on for
// Config.ShutdownGrace, then cancels those still running so they stop at
// their next checkpoint (resumable later) and ends the parked ones, lets
// every stream end with a final frame, stops and joins the server's
// goroutines, closes the listener and waits for open requests, all
// bounded by ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.runs.Refuse()
	if s.cfg.ShutdownGrace > 0 {
		// The agent calls going on may end; a parked run's wait is not
		// waited for.
		gctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownGrace)
		_ = s.runs.CallsEnded(gctx) // the runs still going are canceled below
		cancel()
	}
	s.runs.Close()
	err := s.runs.Wait(ctx)
	// Every run has ended: their goroutines return, then the background
	// (followers of other replicas' runs end with the base context).
	if e := s.runs.Stop(ctx); err == nil {
		err = e
	}
	if e := s.background.Stop(ctx); err == nil {
		err = e
	}
	s.mu.Lock()
	hs := s.http
	s.mu.Unlock()
	if hs != nil {
		if e := hs.Shutdown(ctx); e != nil {
			return e
		}
	}
	return err
}

// writeError answers err in the OpenAI error shape, with a message meant
// for the client (publicMessage: no internal detail; apierror.Writer).
func (s *Server) writeError(w http.ResponseWriter, err error) {
	apierror.Writer{Message: s.publicMessage, RetryAfter: s.cfg.RetryAfter, Now: s.cfg.Now}.Write(w, err)
}
