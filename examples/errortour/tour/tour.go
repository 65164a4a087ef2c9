package tour

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// ReadingType is the context type every tour capability provides.
const ReadingType = "TOUR_READING"

// Reading is what a tour capability produces when it succeeds.
type Reading struct {
	Capability string  `json:"capability"`
	Attempt    int     `json:"attempt"`
	Value      float64 `json:"value"`
	Note       string  `json:"note"`
}

// Summary says which capability answered, on which attempt, and how.
func (r Reading) Summary() string {
	return fmt.Sprintf("%s answered %.1f units on attempt %d (%s)", r.Capability, r.Value, r.Attempt, r.Note)
}

// Errors the scripted capabilities fail with.
var (
	ErrTransient = errors.New("sensor did not answer in time")
	ErrMoved     = errors.New("sensor moved to a new address")
	ErrMisrouted = errors.New("request reached the wrong subsystem")
	ErrInterlock = errors.New("safety interlock is active")
	ErrCorrupt   = errors.New("internal state is corrupt")
	ErrPrimary   = errors.New("primary data source is offline")
)

// Tour holds the scripted capabilities' memory: which (capability, task)
// pairs have already failed once, so "fails the first time" scenarios
// recover on the next plan. It is safe for concurrent use.
type Tour struct {
	mu   sync.Mutex
	seen map[string]bool
}

// New returns a tour.
func New() *Tour { return &Tour{seen: map[string]bool{}} }

// Reset forgets which scenarios already failed once.
func (t *Tour) Reset() {
	t.mu.Lock()
	t.seen = map[string]bool{}
	t.mu.Unlock()
}

// firstTime reports whether cap sees task for the first time, and records it.
func (t *Tour) firstTime(capability, task string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := capability + "\x00" + strings.ToLower(strings.TrimSpace(task))
	if t.seen[k] {
		return false
	}
	t.seen[k] = true
	return true
}

func ok(name string, attempt int, note string) (capabilities.Output, error) {
	r := Reading{Capability: name, Attempt: attempt, Value: 42, Note: note}
	return capabilities.Result(ReadingType, r, r.Summary()), nil
}

// quick is a short retry policy so the tour does not keep users waiting.
func quick(attempts int) capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: attempts, InitialInterval: 100 * time.Millisecond,
		BackoffCoefficient: 2, MaxInterval: time.Second, Jitter: capabilities.JitterNone}
}

func guide(keyword, question string) *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{
		Instructions: fmt.Sprintf("Select only when the question mentions the %q scenario of the error tour.", keyword),
		Examples: []capabilities.ClassifierExample{
			{Query: question, Result: true, Reason: "names the " + keyword + " scenario"},
			{Query: "What is the beam current?", Result: false, Reason: "not part of the error tour"},
		},
	}
}

func orch(name, keyword string) *capabilities.OrchestratorGuide {
	return &capabilities.OrchestratorGuide{
		Instructions: fmt.Sprintf("Use %s alone for the %s scenario of the error tour; it needs no inputs.", name, keyword),
		Examples: []capabilities.OrchestratorExample{{Scenario: "the " + keyword + " scenario",
			Step: capabilities.PlannedStep{ContextKey: keyword + "_reading", Capability: name,
				TaskObjective: "Take the " + keyword + " reading", ExpectedOutput: ReadingType}}},
	}
}

// Capabilities returns the tour's capabilities, one per scenario plus the
// fallback backup_sensor.
func (t *Tour) Capabilities() []capabilities.Capability {
	var defs []capabilities.Definition
	for _, sc := range Scenarios {
		d := capabilities.Definition{
			Name: sc.Capability, Description: sc.Description, Provides: []string{ReadingType},
			ClassifierGuide: guide(sc.Keyword, sc.Question), OrchestratorGuide: orch(sc.Capability, sc.Keyword),
		}
		switch sc.Keyword {
		case "flaky":
			d.Retry = quick(4)
			d.Run = func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				if s.Attempt < 3 {
					return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout,
						fmt.Sprintf("The flaky sensor timed out (attempt %d).", s.Attempt), ErrTransient)
				}
				return ok(sc.Capability, s.Attempt, "recovered after 2 transient timeouts")
			}
		case "dead":
			d.Retry = quick(3)
			d.Run = func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout,
					fmt.Sprintf("The dead sensor timed out (attempt %d).", s.Attempt), ErrTransient)
			}
		case "moved":
			d.Run = func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				if t.firstTime(sc.Capability, s.Task) {
					e := capabilities.NewError(capabilities.Replanning, capabilities.KindNotFound,
						"The sensor moved; the plan must be made again.", ErrMoved)
					e.Metadata = map[string]any{capabilities.MetaReplanningReason: "the sensor's address changed; plan the step again"}
					return capabilities.Output{}, e
				}
				return ok(sc.Capability, s.Attempt, "answered after a new plan")
			}
		case "misrouted":
			d.Run = func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
				if t.firstTime(sc.Capability, s.Task) {
					e := capabilities.NewError(capabilities.Reclassification, capabilities.KindInvalidInput,
						"The request went to the wrong subsystem; capabilities must be selected again.", ErrMisrouted)
					e.Metadata = map[string]any{capabilities.MetaReclassificationReason: "the misrouted capability was the wrong choice on the first try"}
					return capabilities.Output{}, e
				}
				return ok(sc.Capability, s.Attempt, "answered after capabilities were selected again")
			}
		case "interlock":
			d.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
				e := capabilities.NewError(capabilities.Critical, "interlock", "A safety interlock blocks the valve; an operator must clear it.", ErrInterlock)
				e.Metadata = map[string]any{capabilities.MetaSafetyAbortReason: "interlock active",
					capabilities.MetaSuggestions: []string{"ask the shift operator to check the interlock panel"}}
				return capabilities.Output{}, e
			}
		case "corrupt":
			d.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, capabilities.NewError(capabilities.Fatal, "corrupt_state",
					"The capability's internal state is corrupt; the run must stop.", ErrCorrupt)
			}
		case "quota":
			// No classification of its own: the default classifier knows
			// ErrResourceExhausted, and the agent pauses the run for a human.
			d.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, fmt.Errorf("the quota hog used up its disk quota: %w", capabilities.ErrResourceExhausted)
			}
		case "primary":
			d.Fallbacks = []string{"backup_sensor"}
			d.Run = func(context.Context, capabilities.Step) (capabilities.Output, error) {
				return capabilities.Output{}, capabilities.NewError(capabilities.Critical, capabilities.KindConnection,
					"The primary data source is offline.", ErrPrimary)
			}
		}
		// A scenario without a script has no Run: registration reports it.
		defs = append(defs, d)
	}
	// The fallback has no classifier guide: it is reached only as a fallback.
	defs = append(defs, capabilities.Definition{Name: "backup_sensor", Provides: []string{ReadingType},
		// The description avoids the primary scenario's words, so a lexical
		// classifier does not also select the stand-in directly.
		Description: "Stand-in sensor that answers when another one is offline.",
		Run: func(_ context.Context, s capabilities.Step) (capabilities.Output, error) {
			return ok("backup_sensor", s.Attempt, "the fallback for primary_source")
		}})
	out := make([]capabilities.Capability, 0, len(defs))
	for _, d := range defs {
		out = append(out, capabilities.Define(d))
	}
	return out
}
