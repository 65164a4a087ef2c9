package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/graph"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/prompts"
	"github.com/capgraph/capgraph/state"
)

// Reply shapes of the classifier.
const (
	matchShape    = `{"is_match": true} or {"is_match": false}`
	selectedShape = `{"capabilities": ["<capability name>", ...]}`
)

// Keys and JSON schemas of matchShape and selectedShape. A selection's
// schema lists the names it may hold (selectionFor).
var (
	matchReply     = newShape("capability_match", required("is_match", jsonBoolean()))
	selectionReply = newShape("capability_selection", required("capabilities", jsonArray(jsonString())))
)

// selectionFor is the selection shape whose names are the candidates'.
func selectionFor(cands []capabilities.Capability) replyShape {
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name()
	}
	return selectionReply.with(required("capabilities", jsonArray(jsonEnum(names...))))
}

// formatAttemptsPerCapability is how often a per-capability question is
// asked when its replies are unusable: the first time and once more with the
// parse error shown. Still unusable, the classifier fails with a RETRIABLE
// format error (its retry shows the error again) rather than leave the
// capability out.
const formatAttemptsPerCapability = 2

// MetaCapability names, on a per-capability format error, the capability
// whose question got the unusable reply.
const MetaCapability = "capability"

// ClassifierNode selects the capabilities relevant to the task.
type ClassifierNode struct{ base }

// NewClassifier returns the classifier node.
func NewClassifier(cfg Config) (*ClassifierNode, error) {
	b, err := newBase(cfg, state.NodeClassifier)
	if err != nil {
		return nil, err
	}
	return &ClassifierNode{base: b}, nil
}

// Run sets Turn.ActiveCapabilities (respond and clarify always included) and
// clears the plan. After a reclassification error it counts the
// reclassification, records why, and tells the model why the previous
// selection failed. With a model it selects every candidate without a
// call when their guides fit the planner's prompt (selectAll), and when
// task extraction left the task to it (taskDeferred) it asks for the task
// and the selection in one call (taskAndSelection).
func (n *ClassifierNode) Run(ctx context.Context, s state.State) (state.Update, error) {
	t := cloneTurn(s.Turn)
	task := taskText(t)
	if task == "" {
		return state.Update{}, capabilities.NewError(capabilities.Critical, capabilities.KindInvalidInput,
			"the classifier ran without a task", ErrNoTask)
	}
	reclassifying := t.Control.Reclassifications > 0
	if e := t.Control.Error; e != nil && e.Classification.Severity == capabilities.Reclassification {
		t.Control.Reclassifications++
		t.Control.ReclassificationReason = reclassReason(e)
		reclassifying = true
	}
	retry := formatRetry(t.Control.Error, n.name)
	retryCap, part := "", ""
	if t.Control.Error != nil {
		retryCap, _ = t.Control.Error.Classification.Metadata[MetaCapability].(string)
		part, _ = t.Control.Error.Classification.Metadata[MetaPart].(string)
	}
	t.Control.Error = nil
	t.Plan = nil
	graph.Emit(ctx, Status{Node: n.name, Text: "Selecting capabilities…"})

	var (
		selected []string
		used     map[string]int
		offline  bool
		err      error
	)
	switch {
	case t.Options.SkipClassification:
		selected = n.cfg.Registry.Names()
	case !reclassifying && n.taskDeferred(ctx, s, intentOf(t)):
		selected, used, offline, err = n.taskAndSelection(ctx, s, &t, retry, part)
		if err != nil {
			return state.Update{Tokens: used}, err
		}
	default:
		if cands := n.candidates(intentOf(t)); n.online(llm.RoleClassifier) && len(cands) > 0 {
			all, why := n.selectAll(ctx, s.Turn, cands)
			if all {
				for _, c := range cands {
					selected = append(selected, c.Name())
				}
				graph.Emit(ctx, ModelDecision{Node: n.name, Skipped: true, Reason: why})
				break
			}
			if why != "" {
				graph.Emit(ctx, ModelDecision{Node: n.name, Reason: why})
			}
		}
		var calls []call
		selected, calls, offline, err = n.classify(ctx, task, t.Input, t.Control.ReclassificationReason, retry, retryCap, intentOf(t))
		used = tokens(llm.RoleClassifier, calls...)
		if err != nil {
			// The calls made before the failure count against the budget.
			return state.Update{Tokens: used}, err
		}
	}
	// Online, context kept from earlier turns satisfies a requirement (the
	// planner reuses it); offline there is no planner judgement, so providers
	// always run unless the task follows up on the previous one.
	reuse := !offline || (t.Task != nil && t.Task.DependsOnHistory)
	// A capability that acts on the outside world is selected only for a
	// change the user asked for, whatever the model or the lexical scores
	// say (the model was not offered it; this also covers a name it
	// volunteered and SkipClassification).
	intent := intentOf(t)
	selected, _ = withholdSideEffects(n.cfg.Registry, selected, intent)
	_, withheld := withholdSideEffects(n.cfg.Registry, n.cfg.Registry.Names(), intent)
	all, added := expandDependencies(n.cfg.Registry, selected, s.Context, reuse, allowedFor(n.cfg.Registry, intent))
	for _, always := range []string{state.NodeRespond, state.NodeClarify} {
		if !slices.Contains(all, always) {
			all = append(all, always)
		}
	}
	t.ActiveCapabilities = all
	graph.Emit(ctx, CapabilitiesSelected{Capabilities: all, Added: added, Offline: offline, Withheld: withheld})
	return state.Update{Turn: &t, Tokens: used}, nil
}

func reclassReason(e *state.ErrorInfo) string {
	if r, ok := e.Classification.Metadata[capabilities.MetaReclassificationReason].(string); ok && r != "" {
		return r
	}
	if e.Classification.UserMessage != "" {
		return e.Classification.UserMessage
	}
	return e.Message
}

func (n *ClassifierNode) info(c capabilities.Capability) prompts.ClassifierCapability {
	ci := prompts.ClassifierCapability{Name: c.Name(), Description: c.Description()}
	if gp, ok := c.(capabilities.ClassifierGuideProvider); ok {
		if g := gp.ClassifierGuide(); g != nil {
			ci.Instructions = g.Instructions
			ci.Examples = prompts.ShuffledExamples(g, n.cfg.Seed)
		}
	}
	return ci
}

// classify selects from the candidates the intent allows; retry is the
// previous attempt's format error (for retryCap's question in
// per-capability mode).
func (n *ClassifierNode) classify(ctx context.Context, task, input, previous string, retry prompts.FormatRetry, retryCap string, in intent.Intent) (selected []string, calls []call, offline bool, err error) {
	cands := n.candidates(in)
	if len(cands) == 0 {
		return nil, nil, !n.online(llm.RoleClassifier), nil
	}
	if !n.online(llm.RoleClassifier) {
		return n.offlineSelect(task, input, in), nil, true, nil
	}
	if n.cfg.ClassifierMode == PerCapability {
		return n.perCapability(ctx, task, input, previous, cands, retry, retryCap, in)
	}
	infos := make([]prompts.ClassifierCapability, len(cands))
	for i, c := range cands {
		infos[i] = n.info(c)
	}
	if retryCap != "" {
		retry = prompts.FormatRetry{} // a per-capability question's error (the mode changed)
	}
	p, err := n.prompt(prompts.ClassifierBatched, prompts.ClassifierBatchedData{Task: task, Capabilities: infos, PreviousFailure: previous, FormatRetry: retry})
	if err != nil {
		return nil, nil, false, err
	}
	shape := selectionFor(cands)
	c, err := n.generate(ctx, llm.RoleClassifier, p.System, p.Turn, &shape, nil)
	if err != nil {
		return nil, []call{c}, false, err
	}
	if c.offline {
		return n.offlineSelect(task, input, in), nil, true, nil
	}
	names, err := parseSelection(c.text)
	if err != nil {
		return nil, []call{c}, false, formatError(n.name, err.Error(), selectedShape, c.text, nil)
	}
	return n.registered(ctx, names), []call{c}, false, nil
}

// registered keeps the names a model selected that are registered
// capabilities (not respond or clarify), once each; another name is
// reported (NotSelected) and left out.
func (n *ClassifierNode) registered(ctx context.Context, names []string) []string {
	var selected []string
	for _, name := range names {
		if _, ok := n.cfg.Registry.Get(name); !ok || isTerminal(name) {
			if !isTerminal(name) {
				graph.Emit(ctx, NotSelected{Capability: name, Err: "the model named a capability that is not registered"})
			}
			continue
		}
		if !slices.Contains(selected, name) {
			selected = append(selected, name)
		}
	}
	return selected
}

func parseSelection(reply string) ([]string, error) {
	raw, err := extractJSON(reply, selectionReply.keys()...)
	if err != nil {
		return nil, err
	}
	m, err := strictObject(raw, "the reply", selectionReply.keys()...)
	if err != nil {
		return nil, err
	}
	var names []string
	ok, err := field(m, "capabilities", "the reply", &names)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New(`the reply has no "capabilities" list`)
	}
	return names, nil
}

func parseMatch(reply string) (bool, error) {
	raw, err := extractJSON(reply, matchReply.keys()...)
	if err != nil {
		return false, err
	}
	m, err := strictObject(raw, "the reply", matchReply.keys()...)
	if err != nil {
		return false, err
	}
	var v bool
	ok, err := field(m, "is_match", "the reply", &v)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, errors.New(`the reply has no "is_match"`)
	}
	return v, nil
}

// perCapability asks one yes/no question per capability, at most
// MaxConcurrentClassifications at a time. An unusable reply is asked again
// with its parse error shown (formatAttemptsPerCapability); still unusable,
// the classifier fails with a RETRIABLE format error naming the capability,
// never leaving it out silently. A failed call leaves that capability out
// (with a NotSelected event) unless its failure is CRITICAL or FATAL (a
// rejected key fails every call alike) or every call failed: then the
// classifier fails.
func (n *ClassifierNode) perCapability(ctx context.Context, task, input, previous string, cands []capabilities.Capability, retry prompts.FormatRetry, retryCap string, in intent.Intent) ([]string, []call, bool, error) {
	type result struct {
		match bool
		calls []call
		err   error
	}
	results := make([]result, len(cands))
	sem := make(chan struct{}, n.cfg.MaxConcurrentClassifications)
	var wg sync.WaitGroup
	for i, cp := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i].err = llm.CapabilityError(&llm.Error{Kind: llm.ErrCanceled, Role: llm.RoleClassifier, Err: ctx.Err()})
				return
			}
			defer func() { <-sem }()
			var fr prompts.FormatRetry
			if cp.Name() == retryCap {
				fr = retry
			}
			for attempt := 1; ; attempt++ {
				p, err := n.prompt(prompts.Classifier, prompts.ClassifierData{Task: task, Capability: n.info(cp), PreviousFailure: previous, FormatRetry: fr})
				if err != nil {
					results[i].err = err
					return
				}
				c, err := n.generate(ctx, llm.RoleClassifier, p.System, p.Turn, &matchReply, nil)
				results[i].calls = append(results[i].calls, c)
				if err != nil {
					results[i].err = err
					return
				}
				if c.offline {
					return
				}
				m, err := parseMatch(c.text)
				if err == nil {
					results[i].match, results[i].err = m, nil
					return
				}
				problem := fmt.Sprintf("capability %s: %v", cp.Name(), err)
				results[i].err = formatError(n.name, problem, matchShape, c.text, map[string]any{MetaCapability: cp.Name()})
				if attempt >= formatAttemptsPerCapability {
					return
				}
				fr = prompts.FormatRetry{FormatError: err.Error(), ExpectedShape: matchShape, PreviousReply: truncate(c.text, maxReplyInPrompt)}
				graph.Emit(ctx, Status{Node: n.name, Text: fmt.Sprintf("The reply about %s was unusable (%v); asking again…", cp.Name(), err)})
			}
		}()
	}
	wg.Wait()
	var (
		selected []string
		calls    []call
		failed   int
		offline  bool
		format   error
	)
	for _, r := range results {
		calls = append(calls, r.calls...)
	}
	for i, r := range results {
		for _, c := range r.calls {
			offline = offline || c.offline
		}
		if r.err != nil {
			ce := llm.CapabilityError(r.err)
			if ce.Severity >= capabilities.Critical {
				return nil, calls, false, ce
			}
			if errors.Is(r.err, ErrFormat) {
				if format == nil {
					format = r.err
				}
				continue
			}
			failed++
			graph.Emit(ctx, NotSelected{Capability: cands[i].Name(), Err: r.err.Error()})
			continue
		}
		if r.match {
			selected = append(selected, cands[i].Name())
		}
	}
	if offline {
		return n.offlineSelect(task, input, in), nil, true, nil
	}
	if format != nil {
		return nil, calls, false, format
	}
	if failed == len(cands) {
		return nil, calls, false, llm.CapabilityError(results[0].err)
	}
	return selected, calls, false, nil
}

// offlineSelect is the lexical classifier over the capabilities the intent
// allows; a follow-up that refers back is classified by its own words
// (docs/models.md, "Offline mode", and docs/safety.md, "Selection and
// planning").
func (n *ClassifierNode) offlineSelect(task, input string, in intent.Intent) []string {
	ix := n.lexical(in)
	text := task
	if msg, ok := followUpText(task, input); ok {
		if sel := ix.selectLexical(msg, n.cfg.OfflineThreshold, n.cfg.OfflineRelative); len(sel) > 0 {
			return n.withChange(ix, msg, sel, in)
		}
	}
	return n.withChange(ix, text, ix.selectLexical(text, n.cfg.OfflineThreshold, n.cfg.OfflineRelative), in)
}

func (n *ClassifierNode) withChange(ix *lexicalIndex, text string, sel []string, in intent.Intent) []string {
	if !in.IsChange() {
		return sel
	}
	sideEffects := func(name string) bool {
		c, ok := n.cfg.Registry.Get(name)
		return ok && capabilities.HasSideEffects(c)
	}
	if slices.ContainsFunc(sel, sideEffects) {
		return sel
	}
	for _, sc := range ix.scores(text) { // best first
		if sc.Score > 0 && sideEffects(sc.Capability) {
			return append(sel, sc.Capability)
		}
	}
	// The words match none (another language than the descriptions'): the
	// user's change goes to the one capability that changes anything, if
	// there is one.
	var changers []string
	for _, name := range n.cfg.Registry.Names() {
		if sideEffects(name) {
			changers = append(changers, name)
		}
	}
	if len(changers) == 1 {
		return append(sel, changers[0])
	}
	return sel
}

// followUpText returns the user's message when the task is the offline
// join of earlier messages with it (offlineTask) and it refers back to an
// earlier subject. A task written by a model is classified whole.
func followUpText(task, input string) (string, bool) {
	msg := strings.TrimSpace(input)
	if msg == "" || !strings.HasSuffix(task, followUpJoin+msg) {
		return "", false
	}
	return msg, refersBack(msg)
}

// lexical indexes the registry as it is now (building it takes microseconds,
// and capabilities registered after the node was built are included),
// without the capabilities the intent does not allow.
func (n *ClassifierNode) lexical(in intent.Intent) *lexicalIndex {
	allow := allowedFor(n.cfg.Registry, in)
	return newLexicalIndex(slices.DeleteFunc(n.cfg.Registry.All(), func(c capabilities.Capability) bool { return !allow(c.Name()) }))
}
