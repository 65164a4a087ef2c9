package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Which application owns a thread. Several applications may share one
// store (one PostgreSQL database, or an SQLite file opened by two
// programs); each agent runs only its own application's threads, and a run
// in progress only with the graph that started it. Details in
// docs/persistence.md, "Threads belong to one application".

// The metadata keys the agent records with every checkpoint of a turn it
// starts. A request's metadata cannot set them.
const (
	// MetaApplication names the application that owns the thread
	// (Config.Application); absent for an unnamed application.
	MetaApplication = "application"
	// MetaGraphVersion is the version of the graph that runs the thread's
	// current turn (Agent.GraphVersion).
	MetaGraphVersion = "graph_version"
)

// ErrForeignThread: the thread belongs to another application, or its run
// in progress was started by another version of the graph. Errors of this
// kind are *ForeignThreadError and also match ErrBadRequest.
var ErrForeignThread = errors.New("agent: thread belongs to another application")

// ForeignThreadError is a thread this agent must not run or read.
type ForeignThreadError struct {
	Thread string
	// Application is the thread's application ("" when none is recorded:
	// an unnamed application's, or one written before applications were
	// recorded); Want is this agent's.
	Application, Want string
	// GraphVersion and WantGraphVersion are set when the application is
	// the same but the thread's run in progress was started by another
	// graph (other capabilities, or capabilities declared differently).
	GraphVersion, WantGraphVersion string
}

func (e *ForeignThreadError) Error() string {
	if e.GraphVersion != "" {
		return fmt.Sprintf("agent: thread %q has a run in progress started by another version of application %s's graph (%s; this agent's is %s: "+
			"its capabilities or what they declare changed); finish it with the version that started it, or start a new turn",
			e.Thread, appName(e.Want), e.GraphVersion, e.WantGraphVersion)
	}
	return fmt.Sprintf("agent: thread %q belongs to %s, not to %s; it can only be continued by its own application",
		e.Thread, appName(e.Application), appName(e.Want))
}

// Unwrap makes the error match ErrForeignThread and ErrBadRequest.
func (e *ForeignThreadError) Unwrap() []error { return []error{ErrForeignThread, ErrBadRequest} }

func appName(app string) string {
	if app == "" {
		return "no named application (an unnamed agent, or a version that recorded none)"
	}
	return "application " + fmt.Sprintf("%q", app)
}

// Application names the application whose threads this agent runs
// (Config.Application).
func (a *Agent) Application() string { return a.cfg.Application }

// GraphVersion identifies the agent's graph: a digest of the registered
// capabilities' names and what each declares (provides, requires, side
// effects). Agents of one application with the same capabilities have the
// same version, so replicas share their runs in progress; a run in progress
// is never continued by a graph whose capabilities differ.
func (a *Agent) GraphVersion() string { return a.graphVersion }

// graphVersion computes GraphVersion for the registered capabilities.
func graphVersion(caps []capabilities.Capability) string {
	lines := make([]string, 0, len(caps))
	for _, c := range caps {
		var req []string
		for _, r := range c.Requires() {
			card := r.Cardinality
			if card == "" {
				card = capabilities.Single
			}
			req = append(req, fmt.Sprintf("%s/%s", r.Type, card))
		}
		provides := slices.Clone(c.Provides())
		slices.Sort(provides)
		slices.Sort(req)
		lines = append(lines, fmt.Sprintf("%s|%s|%s|%t", c.Name(), strings.Join(provides, ","), strings.Join(req, ","), capabilities.HasSideEffects(c)))
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// withOwner records this agent's application and graph version in a new
// turn's metadata, whatever the request's metadata says.
func (a *Agent) withOwner(md map[string]string) map[string]string {
	md = mergeMeta(md, map[string]string{MetaGraphVersion: a.graphVersion})
	if a.cfg.Application == "" {
		delete(md, MetaApplication)
	} else {
		md[MetaApplication] = a.cfg.Application
	}
	return md
}

// checkOwner returns a *ForeignThreadError unless the thread whose latest
// checkpoint has metadata md belongs to this agent's application; with
// inRun (the thread's run in progress is to be continued) also unless that
// run was started by this graph. A checkpoint recording no graph version
// (written before versions were recorded) is not held against it.
func (a *Agent) checkOwner(thread string, md map[string]string, inRun bool) error {
	if app := md[MetaApplication]; app != a.cfg.Application {
		return &ForeignThreadError{Thread: thread, Application: app, Want: a.cfg.Application}
	}
	if g := md[MetaGraphVersion]; inRun && g != "" && g != a.graphVersion {
		return &ForeignThreadError{Thread: thread, Application: a.cfg.Application, Want: a.cfg.Application, GraphVersion: g, WantGraphVersion: a.graphVersion}
	}
	return nil
}

// ownRun reads the thread's latest checkpoint and checks that this agent
// may continue its run (checkOwner with inRun). A thread without a
// checkpoint passes: what reads it next reports it unknown.
func (a *Agent) ownRun(ctx context.Context, thread string) error {
	t, err := a.cfg.Store.Get(ctx, thread, uuid.Nil)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("agent: read thread %q: %w", thread, err)
	}
	return a.checkOwner(thread, t.Checkpoint.Metadata, true)
}

// ownedFilter is the metadata a store can filter this agent's runs in
// progress by (none for an unnamed application, whose threads record no
// application: those are checked one by one).
func (a *Agent) ownedFilter() map[string]string {
	if a.cfg.Application == "" {
		return nil
	}
	return map[string]string{MetaApplication: a.cfg.Application, MetaGraphVersion: a.graphVersion}
}
