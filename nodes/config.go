package nodes

import (
	"errors"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/vocab"
	"github.com/capgraph/capgraph/prompts"
)

// ClassifierMode chooses how the classifier asks its model.
type ClassifierMode string

const (
	// Batched asks once for the whole selection: LLM calls per turn stay
	// constant as capabilities grow. The default.
	Batched ClassifierMode = vocab.ClassifierBatched
	// PerCapability asks one yes/no question per capability, concurrently
	// (the reference design).
	PerCapability ClassifierMode = vocab.ClassifierPerCapability
)

// TaskExtractionMode says when task extraction asks its model.
type TaskExtractionMode string

const (
	// TaskWhenNeeded asks only when the rules find that the message needs
	// the earlier turns to be understood, or cannot tell (historyNeed);
	// otherwise the message is the task. The default.
	TaskWhenNeeded TaskExtractionMode = vocab.TaskExtractionWhenNeeded
	// TaskAlways asks on every turn.
	TaskAlways TaskExtractionMode = vocab.TaskExtractionAlways
)

// Defaults.
const (
	// DefaultSelectAllWithinTokens is the size of the planner's system
	// prompt, in tokens, up to which the classifier makes every candidate
	// active without asking its model (Config.SelectAllWithinTokens): about
	// fifteen capabilities with guides like the control room's.
	DefaultSelectAllWithinTokens        = 4000
	DefaultMaxConcurrentClassifications = 5
	// DefaultOfflineThreshold is the lowest lexical score that selects a
	// capability offline when the task shares no word with its name,
	// description or instructions (a match through its examples only).
	DefaultOfflineThreshold = 0.5
	// DefaultOfflineRelative keeps only capabilities scoring at least this
	// fraction of the best score, so one strong match is not diluted by
	// capabilities sharing a common word.
	DefaultOfflineRelative = 0.5
	DefaultSeed            = 1
)

// ErrConfig is the kind of configuration errors.
var ErrConfig = errors.New("nodes: invalid configuration")

// Config is shared by the node constructors.
type Config struct {
	// Registry holds the application's capabilities. Required.
	Registry *capabilities.Registry
	// Models gives each role its model; nil means every node runs offline.
	Models llm.Models
	// Prompts are the templates; nil means prompts.Default().
	Prompts *prompts.Set
	// ClassifierMode is batched (default) or per_capability.
	ClassifierMode ClassifierMode
	// TaskExtraction says when task extraction asks its model:
	// TaskWhenNeeded (default) or TaskAlways.
	TaskExtraction TaskExtractionMode
	// SelectAllWithinTokens: when the orchestrator's system prompt with the
	// guides of every capability the classifier would choose from takes at
	// most this many tokens (estimated at four characters a token), the
	// classifier makes them all active without a model call, and the
	// planner chooses among them. 0 means DefaultSelectAllWithinTokens; a
	// negative value means the classifier always asks its model.
	SelectAllWithinTokens int
	// SeparateTaskAndSelection asks task extraction and the classifier in
	// two calls when both need their model; by default one call of the
	// classifier's model returns the task and the selection together
	// (prompts.TaskSelection), with the two calls as the fallback when its
	// reply is unusable.
	SeparateTaskAndSelection bool
	// MaxConcurrentClassifications bounds per-capability calls in flight (default 5).
	MaxConcurrentClassifications int
	// Seed orders the classifier examples (default 1): prompts are reproducible.
	Seed uint64
	// OfflineThreshold and OfflineRelative tune the offline classifier
	// (defaults DefaultOfflineThreshold, DefaultOfflineRelative).
	OfflineThreshold float64
	OfflineRelative  float64
	// RetryPolicy applies to the nodes' own failures (LLM errors, unusable
	// replies); zero fields take the capabilities defaults.
	RetryPolicy capabilities.RetryPolicy
	// Now is the clock for message and plan times; nil means time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() (Config, error) {
	if c.Registry == nil {
		return c, fmt.Errorf("%w: Registry is nil", ErrConfig)
	}
	if c.Models == nil {
		c.Models = llm.None
	}
	if c.Prompts == nil {
		c.Prompts = prompts.Default()
	}
	switch c.ClassifierMode {
	case "":
		c.ClassifierMode = Batched
	case Batched, PerCapability:
	default:
		return c, fmt.Errorf("%w: classifier mode %q (want %q or %q)", ErrConfig, c.ClassifierMode, Batched, PerCapability)
	}
	switch c.TaskExtraction {
	case "":
		c.TaskExtraction = TaskWhenNeeded
	case TaskWhenNeeded, TaskAlways:
	default:
		return c, fmt.Errorf("%w: task extraction %q (want %q or %q)", ErrConfig, c.TaskExtraction, TaskWhenNeeded, TaskAlways)
	}
	if c.SelectAllWithinTokens == 0 {
		c.SelectAllWithinTokens = DefaultSelectAllWithinTokens
	}
	if c.MaxConcurrentClassifications < 0 {
		return c, fmt.Errorf("%w: max_concurrent_classifications must be positive, got %d", ErrConfig, c.MaxConcurrentClassifications)
	}
	if c.MaxConcurrentClassifications == 0 {
		c.MaxConcurrentClassifications = DefaultMaxConcurrentClassifications
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.OfflineThreshold < 0 || c.OfflineRelative < 0 || c.OfflineRelative > 1 {
		return c, fmt.Errorf("%w: offline threshold %g / relative %g out of range", ErrConfig, c.OfflineThreshold, c.OfflineRelative)
	}
	if c.OfflineThreshold == 0 {
		c.OfflineThreshold = DefaultOfflineThreshold
	}
	if c.OfflineRelative == 0 {
		c.OfflineRelative = DefaultOfflineRelative
	}
	if err := c.RetryPolicy.Validate(); err != nil {
		return c, fmt.Errorf("%w: retry policy: %w", ErrConfig, err)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
