package plant

import (
	"context"
	"errors"
	"reflect"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// ChannelFinding is the channel_finding capability: natural language →
// channel names (CHANNEL_ADDRESSES). Parameters: query (string; default the
// step's objective, then the task), max_results (int, default 20).
type ChannelFinding struct{ plant *Plant }

// NewChannelFinding returns channel_finding over p.
func NewChannelFinding(p *Plant) *ChannelFinding { return &ChannelFinding{plant: p} }

func (*ChannelFinding) Name() string { return "channel_finding" }
func (*ChannelFinding) Description() string {
	return "Find the control-system channel names (process variable addresses) that match a description such as \"beam current\" or \"vacuum in sector 3\"."
}
func (*ChannelFinding) Provides() []string { return []string{ChannelAddressesType} }

// ProvidedTypes states the Go type of what it provides, which the registry
// compares with what the readers and the write require.
func (*ChannelFinding) ProvidedTypes() map[string]reflect.Type {
	return map[string]reflect.Type{ChannelAddressesType: reflect.TypeFor[ChannelAddresses]()}
}
func (*ChannelFinding) Requires() []capabilities.Requirement { return nil }

// Execute searches with the query parameter, else the objective, then the
// task: the first text that matches wins. When none matches, the result is
// still a success: ChannelAddresses with no channels and NotFound saying
// what does not exist and what does (for the user's own words, the task,
// when it was searched). Another plan cannot find a channel the machine
// does not have, so this is an answer, not a failure to recover from.
func (f *ChannelFinding) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	if err := ctx.Err(); err != nil {
		return capabilities.Output{}, err
	}
	maxResults, err := capabilities.Param(step, "max_results", DefaultMaxMatches)
	if err != nil {
		return capabilities.Output{}, capabilities.NewError(capabilities.Replanning, capabilities.KindInvalidInput, "The max_results parameter is not a number.", err)
	}
	query, err := capabilities.Param(step, "query", "")
	if err != nil {
		return capabilities.Output{}, capabilities.NewError(capabilities.Replanning, capabilities.KindInvalidInput, "The query parameter is not text.", err)
	}
	texts := stepTexts(step)
	if query != "" {
		texts = []string{query}
	}
	if len(texts) == 0 {
		return capabilities.Output{}, capabilities.NewError(capabilities.Replanning, capabilities.KindInvalidInput,
			"Channel finding needs a description of the channels to look for.", ErrNoMatch)
	}
	for _, q := range texts {
		if action := unsupportedAction(q); action != "" {
			out := ChannelAddresses{Query: q, Channels: []string{}, NotFound: &NoMatch{Query: q, Unsupported: action}}
			return capabilities.Result(ChannelAddressesType, out, out.Summary()), nil
		}
	}
	count := len(texts) > 0 && isCount(texts[len(texts)-1])
	if count || len(texts) > 0 && isVerdict(texts[len(texts)-1]) {
		// Every channel counts, and a verdict judges them all.
		maxResults = len(f.plant.names)
	}
	var miss *NoMatch
	for _, q := range texts {
		res, err := f.plant.Find(f.plant.ResolveFollowUps(q), maxResults)
		if err != nil {
			var nm *NoMatch
			if !errors.As(err, &nm) {
				return capabilities.Output{}, err
			}
			if miss == nil || q == strings.TrimSpace(step.Task) {
				miss = nm
			}
			continue
		}
		out := ChannelAddresses{Query: res.Query, Channels: res.Channels, Truncated: res.Truncated,
			Corrected: res.Corrected, Ignored: res.Ignored, Descriptions: map[string]string{}, Count: count}
		if count {
			out.Subject = f.plant.subject(q)
		}
		for _, c := range res.Channels {
			if ch, ok := f.plant.Channel(c); ok {
				out.Descriptions[c] = ch.Description
			}
		}
		return capabilities.Result(ChannelAddressesType, out, out.Summary()), nil
	}
	out := ChannelAddresses{Query: miss.Query, Channels: []string{}, NotFound: miss}
	return capabilities.Result(ChannelAddressesType, out, out.Summary()), nil
}

// ClassifyError: "nothing matches" is a result, not an error (Execute); an
// ErrNoMatch that still arrives here (from a wrapping capability) is
// CRITICAL with its explanation, since replanning cannot find what does not
// exist; anything else → CRITICAL (the reference's table).
func (*ChannelFinding) ClassifyError(err error, _ capabilities.ErrorContext) capabilities.Classification {
	var ce *capabilities.Error
	var nm *NoMatch
	switch {
	case errors.As(err, &ce):
		return ce.Classification()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return capabilities.Classification{} // the default classifier knows these
	case errors.As(err, &nm):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindNotFound,
			UserMessage: nm.Explain(), Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error()}}
	case errors.Is(err, ErrNoMatch):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindNotFound,
			UserMessage: "No control-system channel matches the description.",
			Metadata:    map[string]any{capabilities.MetaTechnicalDetails: err.Error()}}
	}
	return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown,
		UserMessage: "Channel finding failed unexpectedly.", Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error()}}
}

func (*ChannelFinding) ClassifierGuide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{
		Instructions: "Select when the user refers to accelerator quantities or devices by description and their channel names must be found first, or asks which channels exist, how many there are, or to list, search or name channels.",
		Examples: []capabilities.ClassifierExample{
			{Query: "What is the beam current?", Result: true, Reason: "the beam current channel must be found before it can be read"},
			{Query: "Which channels measure the vacuum in sector 3?", Result: true, Reason: "asks for channel names"},
			{Query: "Show me the RF cavity voltage over the last 2 hours", Result: true, Reason: "the RF cavity voltage channels must be found first"},
			{Query: "How many quads are in the ring?", Result: true, Reason: "counts channels"},
			{Query: "How many BPMs does sector 2 have?", Result: true, Reason: "counts channels"},
			{Query: "Read SR:DCCT:CURRENT", Result: false, Reason: "the channel name is already given"},
			{Query: "What is a storage ring?", Result: false, Reason: "a general question, no channel involved"},
		},
	}
}

func (*ChannelFinding) OrchestratorGuide() *capabilities.OrchestratorGuide {
	return &capabilities.OrchestratorGuide{
		Instructions: "Use channel_finding first whenever a later step needs channel names (CHANNEL_ADDRESSES) and the user described the quantity in words. " +
			"Put the description in parameters.query, without time ranges or values. One step can find several related channels.",
		Priority: 10,
		Examples: []capabilities.OrchestratorExample{
			{Scenario: "The user asks for the beam current",
				Step: capabilities.PlannedStep{ContextKey: "beam_current_channels", Capability: "channel_finding",
					TaskObjective: "Find the storage ring beam current channel", ExpectedOutput: ChannelAddressesType,
					Parameters: map[string]any{"query": "storage ring beam current"}}},
			{Scenario: "The user asks about vacuum in sector 3 over the last day",
				Step: capabilities.PlannedStep{ContextKey: "sector3_vacuum_channels", Capability: "channel_finding",
					TaskObjective: "Find the vacuum gauges of sector 3", ExpectedOutput: ChannelAddressesType,
					Parameters: map[string]any{"query": "vacuum pressure sector 3"}},
				Notes: "the time range goes to archiver_retrieval, not to the query"},
		},
	}
}
