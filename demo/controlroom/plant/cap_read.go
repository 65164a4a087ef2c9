package plant

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// ChannelRead is the channel_read capability: the current values of the
// channels in its CHANNEL_ADDRESSES input (CHANNEL_VALUES).
type ChannelRead struct {
	plant *Plant
	// targets, when set, are the plants it reads by the step's target
	// (targets.go); plant is then the default one's.
	targets Targets
	// machine names the plant's quantities and systems for the classifier
	// guide, built once: the catalog is fixed when the plant is made, and
	// the guide is read at every turn.
	machine func() string
}

// NewChannelRead returns channel_read over p.
func NewChannelRead(p *Plant) *ChannelRead {
	return &ChannelRead{plant: p, machine: sync.OnceValue(func() string {
		return "The machine's quantities: " + strings.Join(p.Quantities(), ", ") + ". Its systems: " + strings.Join(p.Systems(), ", ") + "."
	})}
}

func (*ChannelRead) Name() string { return "channel_read" }
func (*ChannelRead) Description() string {
	return "Read the present live value of control-system channels now: what is the beam current, the vacuum pressure, a temperature, a magnet current or a setpoint at this moment, and whether it is above or below a level."
}
func (*ChannelRead) Provides() []string { return []string{ChannelValuesType} }
func (*ChannelRead) Requires() []capabilities.Requirement {
	return []capabilities.Requirement{ChannelAddressesKey.RequiredAll()}
}

// Execute reads every channel; one failed read fails the step (a partial
// answer would look complete to the user). When channel finding found no
// channel it reads nothing and says so.
func (r *ChannelRead) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	p, err := r.targets.on(r.plant, step.Target)
	if err != nil {
		return capabilities.Output{}, err
	}
	chans, found, err := p.readChannels(step)
	if errors.Is(err, errNothingFound) {
		return capabilities.Result(ChannelValuesType, ChannelValues{Values: []ChannelValue{}}, nothingDone("read", err)), nil
	}
	if err != nil {
		return capabilities.Output{}, err
	}
	var out ChannelValues
	for _, name := range chans {
		if err := ctx.Err(); err != nil {
			return capabilities.Output{}, err
		}
		rd, err := p.Read(name)
		if err != nil {
			return capabilities.Output{}, err
		}
		c, _ := p.Channel(name)
		out.Values = append(out.Values, ChannelValue{Channel: name, Value: rd.Value, Text: c.FormatWithUnits(rd.Value),
			Units: rd.Units, Time: rd.Time, Description: c.Description})
	}
	for _, t := range stepTexts(step) {
		out.Counted = out.Counted || isCount(t)
		if isVerdict(t) {
			v := p.judge(p.subject(t), out.Values)
			out.Verdict = &v
			break
		}
	}
	result := capabilities.Result(ChannelValuesType, out, out.Summary()).With(out.Artifact(p))
	if orbit, ok := out.OrbitArtifact(p); ok {
		result = result.With(orbit) // BPMs along the ring: their profile
	}
	return withFound(result, step, found), nil
}

// RetryPolicy: reads are cheap and safe to repeat; an unknown channel is
// never retried (a new plan is needed).
func (*ChannelRead) RetryPolicy() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 500 * time.Millisecond,
		BackoffCoefficient: 2, MaxInterval: 5 * time.Second,
		NonRetryable: []string{capabilities.KindNotFound, capabilities.KindInvalidInput}}
}

// ClassifyError follows the reference: timeout → RETRIABLE; unknown channel
// or missing input → REPLANNING; anything else → RETRIABLE.
func (*ChannelRead) ClassifyError(err error, _ capabilities.ErrorContext) capabilities.Classification {
	return classifyReadLike(err, "read")
}

// classifyReadLike is shared by channel_read and, with its own exceptions,
// archiver_retrieval.
func classifyReadLike(err error, op string) capabilities.Classification {
	var ce *capabilities.Error
	switch {
	case errors.As(err, &ce):
		return ce.Classification()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return capabilities.Classification{}
	case errors.Is(err, ErrTimeout):
		return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindTimeout,
			UserMessage: "The control system did not answer the " + op + " in time.",
			Metadata:    map[string]any{capabilities.MetaTechnicalDetails: err.Error()}}
	case errors.Is(err, ErrUnknownChannel):
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindNotFound,
			UserMessage: "A channel in the plan does not exist.",
			Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error(),
				capabilities.MetaReplanningReason: "use channel_finding to get valid channel names"}}
	case errors.Is(err, capabilities.ErrMissingInput):
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindMissingInput,
			UserMessage: "The step has no channels to " + op + ".",
			Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error(),
				capabilities.MetaReplanningReason: "add a channel_finding step and pass its CHANNEL_ADDRESSES as input"}}
	}
	return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindUnknown,
		UserMessage: "The " + op + " failed.", Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error()}}
}

// ClassifierGuide names the machine's quantities (from the channels'
// synonyms), so the offline classifier reads a question that names one
// ("What is the RF cavity voltage?", "dcct?") as a request for its present
// value; the negated phrases keep history, changes and channel listings out.
func (r *ChannelRead) ClassifierGuide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{
		Instructions: "Select when the user names a machine quantity and wants its present, live value " +
			"(not its history, trend, average or statistics over the last hours or since yesterday; not a plot, chart or graph; not a comparison with yesterday or last week; " +
			"not to set, change, adjust, raise or lower it; not a list of which channels exist nor how many there are). " +
			r.machine(),
		Examples: []capabilities.ClassifierExample{
			{Query: "What is the beam current?", Result: true, Reason: "asks for a live value"},
			{Query: "What is the vacuum pressure in sector 3?", Result: true, Reason: "asks for live values"},
			{Query: "Read SR:RF:CAV1:VOLT", Result: true, Reason: "explicit read"},
			{Query: "What is the quadrupole Q1 current in the BTS line?", Result: true, Reason: "a magnet's present current: a read, nothing is changed"},
			{Query: "What's the setpoint of the BTS Q1 quadrupole?", Result: true, Reason: "what a setting is now: a read"},
			{Query: "Is the Q1 current above 100 A?", Result: true, Reason: "compares a present value with a level: a read"},
			{Query: "What is Q1 set to?", Result: true, Reason: "what a setting is now: a read"},
			{Query: "What would happen if I set Q1 to 105 A?", Result: true, Reason: "hypothetical: nothing is changed, the present value helps the answer"},
			{Query: "Show me the beam lifetime over the last day", Result: false, Reason: "history: archiver_retrieval"},
			{Query: "Set the Q1 current to 105 A", Result: false, Reason: "a write, not a read"},
			{Query: "Set the quadrupole Q1 current in the BTS line to 105 A", Result: false, Reason: "a write: channel_write"},
			{Query: "What is a storage ring?", Result: false, Reason: "a general question, no channel involved"},
			{Query: "How many quads are in the ring?", Result: false, Reason: "a count of channels: channel_finding"},
			{Query: "How many BPMs are there?", Result: false, Reason: "a count of channels: channel_finding"},
		},
	}
}

func (*ChannelRead) OrchestratorGuide() *capabilities.OrchestratorGuide {
	return &capabilities.OrchestratorGuide{
		Instructions: "Use channel_read for present values. It needs CHANNEL_ADDRESSES from a channel_finding step (or a channels parameter listing exact names).",
		Priority:     20,
		Examples: []capabilities.OrchestratorExample{
			{Scenario: "Read the beam current after finding its channel",
				Step: capabilities.PlannedStep{ContextKey: "beam_current_values", Capability: "channel_read",
					TaskObjective: "Read the present storage ring beam current", ExpectedOutput: ChannelValuesType,
					Inputs: []capabilities.InputRef{{Type: ChannelAddressesType, Key: "beam_current_channels"}}}},
		},
	}
}
