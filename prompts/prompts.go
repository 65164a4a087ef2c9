package prompts

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"
)

// Template names, one per role (the classifier has a per-capability and a
// batched form). A role's template renders its system prompt: the
// instructions, capability guides and examples, the same from turn to turn
// and thread to thread, so a provider's prompt cache serves them. Its turn
// template (TurnOf) renders the turn's content — the task, the chat, the
// results, a failure to avoid — sent after it as the user message.
const (
	TaskExtraction    = "task_extraction"
	Classifier        = "classifier"
	ClassifierBatched = "classifier_batched"
	// TaskSelection asks for the task and the capability selection in one
	// call, when both need a model (nodes: the classifier's combined call).
	TaskSelection    = "task_selection"
	Orchestrator     = "orchestrator"
	Response         = "response"
	Clarify          = "clarify"
	ErrorExplanation = "error"
	// Approval reads a human's free-text answer to an approval, which it
	// may only call a rejection or unclear (docs/approvals.md).
	Approval = "approval"

	// The turn templates.
	TaskExtractionTurn = "task_extraction_turn" // also TaskSelection's
	ClassifierTurn     = "classifier_turn"      // both classifier forms'
	OrchestratorTurn   = "orchestrator_turn"
	ResponseTurn       = "response_turn"
	ClarifyTurn        = "clarify_turn"
)

// Names lists every template name.
func Names() []string {
	return []string{TaskExtraction, Classifier, ClassifierBatched, TaskSelection, Orchestrator, Response, Clarify, ErrorExplanation, Approval,
		TaskExtractionTurn, ClassifierTurn, OrchestratorTurn, ResponseTurn, ClarifyTurn}
}

// TurnOf returns the turn template of a role's template, or "" when the
// role has none (the error explanation and the approval reading, whose
// user message is not templated).
func TurnOf(name string) string {
	switch name {
	case TaskExtraction, TaskSelection:
		return TaskExtractionTurn
	case Classifier, ClassifierBatched:
		return ClassifierTurn
	case Orchestrator:
		return OrchestratorTurn
	case Response:
		return ResponseTurn
	case Clarify:
		return ClarifyTurn
	}
	return ""
}

// Prompt is a role's two messages.
type Prompt struct {
	// System is the stable part, sent first: the same bytes for every turn
	// of every thread while the capabilities and templates stay the same.
	System string
	// Turn is the turn's content, sent last as the user message.
	Turn string
}

// RenderPrompt renders a role's template as the system prompt and its turn
// template (TurnOf) as the turn's message, from the same data.
func (s *Set) RenderPrompt(name string, data any) (Prompt, error) {
	sys, err := s.Render(name, data)
	if err != nil {
		return Prompt{}, err
	}
	turn := TurnOf(name)
	if turn == "" {
		return Prompt{}, &TemplateError{Name: name, Err: errors.New("has no turn template")}
	}
	t, err := s.Render(turn, data)
	if err != nil {
		return Prompt{}, err
	}
	return Prompt{System: sys, Turn: t}, nil
}

//go:embed templates/*.tmpl
var embedded embed.FS

// ErrTemplate is the kind of every template error.
var ErrTemplate = errors.New("prompts: template error")

// TemplateError names the template and what is wrong.
type TemplateError struct {
	Name string
	Err  error
}

func (e *TemplateError) Error() string   { return fmt.Sprintf("prompts: template %q: %v", e.Name, e.Err) }
func (e *TemplateError) Unwrap() []error { return []error{ErrTemplate, e.Err} }

// Config overrides templates. Overrides win over Dir, Dir over the embedded defaults.
type Config struct {
	// Dir holds <name>.tmpl files replacing the defaults of those names.
	Dir string
	// Overrides maps a template name to its source.
	Overrides map[string]string
}

// Set is a parsed set of templates, safe for concurrent use.
type Set struct {
	tmpl map[string]*template.Template
	// size is each template's last output size: the next rendering starts
	// with a buffer that fits, rather than growing one write at a time.
	size map[string]*atomic.Int64
	// builtin holds the Go form of each embedded template that is not
	// overridden (builtin.go); constant the output of each template without
	// actions, which is the same for any data.
	builtin  map[string]func(*strings.Builder, any) bool
	constant map[string]string
}

var funcs = template.FuncMap{
	"join":  strings.Join,
	"trim":  strings.TrimSpace,
	"inc":   func(i int) int { return i + 1 },
	"quote": func(s string) string { return fmt.Sprintf("%q", s) },
}

var defaultSet = sync.OnceValues(func() (*Set, error) { return New(Config{}) })

// Default returns the embedded templates, parsed once.
func Default() *Set {
	s, err := defaultSet()
	if err != nil {
		// The embedded templates are tested; failing here is a build defect.
		return &Set{tmpl: map[string]*template.Template{}}
	}
	return s
}

// New parses the embedded templates with the configured overrides. Unknown
// override names and unparsable templates are errors naming the template.
func New(cfg Config) (*Set, error) {
	src, embeddedSrc := map[string]string{}, map[string]string{}
	for _, n := range Names() {
		b, err := embedded.ReadFile("templates/" + n + ".tmpl")
		if err != nil {
			return nil, &TemplateError{Name: n, Err: err}
		}
		src[n] = string(b)
		embeddedSrc[n] = string(b)
	}
	var errs []error
	if cfg.Dir != "" {
		entries, err := os.ReadDir(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("%w: override directory: %w", ErrTemplate, err)
		}
		for _, e := range entries {
			name, ok := strings.CutSuffix(e.Name(), ".tmpl")
			if e.IsDir() || !ok {
				continue
			}
			if !slices.Contains(Names(), name) {
				errs = append(errs, &TemplateError{Name: name, Err: fmt.Errorf("unknown template in %s (want one of %s)", cfg.Dir, strings.Join(Names(), ", "))})
				continue
			}
			b, err := fs.ReadFile(os.DirFS(cfg.Dir), e.Name())
			if err != nil {
				errs = append(errs, &TemplateError{Name: name, Err: err})
				continue
			}
			src[name] = string(b)
		}
	}
	for name, s := range cfg.Overrides {
		if !slices.Contains(Names(), name) {
			errs = append(errs, &TemplateError{Name: name, Err: fmt.Errorf("unknown template (want one of %s)", strings.Join(Names(), ", "))})
			continue
		}
		src[name] = s
	}
	set := &Set{tmpl: map[string]*template.Template{}, size: map[string]*atomic.Int64{},
		builtin: map[string]func(*strings.Builder, any) bool{}, constant: map[string]string{}}
	for _, n := range Names() {
		t, err := template.New(n).Funcs(funcs).Option("missingkey=error").Parse(src[n])
		if err != nil {
			errs = append(errs, &TemplateError{Name: n, Err: err})
			continue
		}
		set.tmpl[n] = t
		set.size[n] = new(atomic.Int64)
		if text, ok := constantText(t); ok {
			set.constant[n] = strings.TrimSpace(text)
		} else if r := builtinRenderers[n]; r != nil && src[n] == embeddedSrc[n] {
			set.builtin[n] = r
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}

// Render executes a template. The result has surrounding blank space trimmed.
func (s *Set) Render(name string, data any) (string, error) {
	t, ok := s.tmpl[name]
	if !ok {
		return "", &TemplateError{Name: name, Err: errors.New("no such template")}
	}
	if text, ok := s.constant[name]; ok {
		return text, nil
	}
	var b strings.Builder
	size := s.size[name]
	if size != nil {
		b.Grow(int(size.Load()) + 256)
	}
	if r := s.builtin[name]; r == nil || !r(&b, data) {
		if err := t.Execute(&b, data); err != nil {
			return "", &TemplateError{Name: name, Err: err}
		}
	}
	if size != nil {
		size.Store(int64(b.Len()))
	}
	return strings.TrimSpace(b.String()), nil
}

// constantText returns the text of a template made of text alone.
func constantText(t *template.Template) (string, bool) {
	if t.Tree == nil || t.Root == nil || len(t.Root.Nodes) == 0 || len(t.Templates()) > 1 {
		return "", false
	}
	var b strings.Builder
	for _, n := range t.Root.Nodes {
		text, ok := n.(*parse.TextNode)
		if !ok {
			return "", false
		}
		b.Write(text.Text)
	}
	return b.String(), true
}
