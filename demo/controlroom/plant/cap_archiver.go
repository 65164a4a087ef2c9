package plant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// DefaultArchiveRange is used when neither the parameters nor the task name
// a time range.
const DefaultArchiveRange = time.Hour

// ArchiverRetrieval is the archiver_retrieval capability: the archived
// history of the channels in its CHANNEL_ADDRESSES input over a time range,
// with summary statistics (ARCHIVER_DATA). Parameters: start and end
// (RFC 3339), or duration ("2h"); otherwise the range is parsed from the
// objective or task ("last 2 hours", "since yesterday"), else the last hour.
type ArchiverRetrieval struct{ plant *Plant }

// NewArchiverRetrieval returns archiver_retrieval over p.
func NewArchiverRetrieval(p *Plant) *ArchiverRetrieval { return &ArchiverRetrieval{plant: p} }

func (*ArchiverRetrieval) Name() string { return "archiver_retrieval" }
func (*ArchiverRetrieval) Description() string {
	return "Retrieve archived history of channels over a past time range (last hours, since yesterday) with min, max, mean and standard deviation: trends and how values changed over time."
}
func (*ArchiverRetrieval) Provides() []string { return []string{ArchiverDataType} }
func (*ArchiverRetrieval) Requires() []capabilities.Requirement {
	return []capabilities.Requirement{ChannelAddressesKey.RequiredAll()}
}

// errBadRange marks invalid range parameters.
var errBadRange = errors.New("invalid time range")

// timeRange decides the range of a step.
func (a *ArchiverRetrieval) timeRange(step capabilities.Step) (TimeRange, string, error) {
	now := a.plant.Now().UTC()
	start, _ := capabilities.Param(step, "start", "")
	end, _ := capabilities.Param(step, "end", "")
	dur, _ := capabilities.Param(step, "duration", "")
	switch {
	case start != "":
		s, err := time.Parse(time.RFC3339, start)
		if err != nil {
			return TimeRange{}, "", fmt.Errorf("%w: start %q is not an RFC 3339 time", errBadRange, start)
		}
		e := now
		if end != "" {
			if e, err = time.Parse(time.RFC3339, end); err != nil {
				return TimeRange{}, "", fmt.Errorf("%w: end %q is not an RFC 3339 time", errBadRange, end)
			}
		}
		if !e.After(s) {
			return TimeRange{}, "", fmt.Errorf("%w: end %s is not after start %s", errBadRange, end, start)
		}
		return TimeRange{Start: s.UTC(), End: e.UTC(), Phrase: "requested range"}, "", nil
	case dur != "":
		d, err := time.ParseDuration(dur)
		if err != nil || d <= 0 {
			return TimeRange{}, "", fmt.Errorf("%w: duration %q (want e.g. \"2h\", \"30m\")", errBadRange, dur)
		}
		return TimeRange{Start: now.Add(-d), End: now, Phrase: "last " + d.String()}, "", nil
	}
	for _, t := range stepTexts(step) {
		// The latest message that names a range: a follow-up's replaces the
		// subject's.
		if r, ok := latestTimeRange(t, now); ok {
			return r, "", nil
		}
	}
	return TimeRange{Start: now.Add(-DefaultArchiveRange), End: now, Phrase: "last hour"},
		"no time range was given, so the last hour is shown", nil
}

// Execute retrieves every channel's series. When channel finding found no
// channel it retrieves nothing and says so.
func (a *ArchiverRetrieval) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	chans, found, err := a.plant.readChannels(step)
	if errors.Is(err, errNothingFound) {
		return capabilities.Result(ArchiverDataType, ArchiverData{Series: []Series{}}, nothingDone("retrieved from the archive", err)), nil
	}
	if err != nil {
		return capabilities.Output{}, err
	}
	r, note, err := a.timeRange(step)
	if err != nil {
		return capabilities.Output{}, err
	}
	out := ArchiverData{Range: r, Note: note}
	texts := stepTexts(step)
	for _, t := range texts {
		if shift, ok := latestComparison(t); ok {
			out.Compare = &Comparison{Shift: shift, Range: TimeRange{Start: r.Start.Add(-shift.By), End: r.End.Add(-shift.By), Phrase: shift.Words}}
			break
		}
	}
	for _, t := range texts {
		out.Plot = out.Plot || wantsPlot(t)
	}
	for _, name := range chans {
		if err := ctx.Err(); err != nil {
			return capabilities.Output{}, err
		}
		s, err := a.plant.History(name, r.Start, r.End)
		if err != nil {
			return capabilities.Output{}, err
		}
		out.Series = append(out.Series, s)
		if c := out.Compare; c != nil {
			s, err := a.plant.History(name, c.Range.Start, c.Range.End)
			if err != nil {
				return capabilities.Output{}, err
			}
			c.Series = append(c.Series, s)
		}
	}
	return withFound(capabilities.Result(ArchiverDataType, out, out.Summary()).With(out.Artifact()), step, found), nil
}

// RetryPolicy: archive queries are read-only; retry timeouts a few times.
func (*ArchiverRetrieval) RetryPolicy() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: 3, InitialInterval: 500 * time.Millisecond,
		BackoffCoefficient: 2, MaxInterval: 5 * time.Second,
		NonRetryable: []string{capabilities.KindNotFound, capabilities.KindInvalidInput, capabilities.KindConnection}}
}

// ClassifyError follows the reference: timeout → RETRIABLE; archiver
// unreachable → CRITICAL; no data, bad range or missing input →
// REPLANNING; other archiver errors → RETRIABLE.
func (*ArchiverRetrieval) ClassifyError(err error, _ capabilities.ErrorContext) capabilities.Classification {
	switch {
	case errors.Is(err, ErrDisconnected):
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindConnection,
			UserMessage: "The archiver is unreachable, so no history can be retrieved.",
			Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error(),
				capabilities.MetaSuggestions: []string{"check the archiver service", "ask for the present value instead (channel_read)"}}}
	case errors.Is(err, ErrNoData):
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindNotFound,
			UserMessage: "The archive has no data in that time range.",
			Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error(),
				capabilities.MetaReplanningReason: "choose a range within the archive's retention, or ask the user"}}
	case errors.Is(err, errBadRange):
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindInvalidInput,
			UserMessage: "The requested time range is not valid.",
			Metadata: map[string]any{capabilities.MetaTechnicalDetails: err.Error(),
				capabilities.MetaReplanningReason: "pass start/end as RFC 3339 times or duration as e.g. \"2h\""}}
	}
	return classifyReadLike(err, "archive query")
}

func (*ArchiverRetrieval) ClassifierGuide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{
		Instructions: "Select when the user asks about the past: history, trends, statistics, or values over a time range; " +
			"a plot, chart or graph of values; a comparison with yesterday or last week.",
		Examples: []capabilities.ClassifierExample{
			{Query: "Plot the beam current", Result: true, Reason: "a chart shows values over time"},
			{Query: "Compare the RF voltage with yesterday", Result: true, Reason: "the same window the day before"},
			{Query: "Show me the RF cavity voltage over the last 2 hours", Result: true, Reason: "a time range in the past"},
			{Query: "How did the beam lifetime change since yesterday?", Result: true, Reason: "a trend since yesterday"},
			{Query: "What was the average vacuum pressure in sector 3 during the last day?", Result: true, Reason: "statistics over a range"},
			{Query: "What is the beam current?", Result: false, Reason: "a present value: channel_read"},
		},
	}
}

func (*ArchiverRetrieval) OrchestratorGuide() *capabilities.OrchestratorGuide {
	return &capabilities.OrchestratorGuide{
		Instructions: "Use archiver_retrieval for history. It needs CHANNEL_ADDRESSES from channel_finding. " +
			"Give the range as parameters.duration (\"2h\") or parameters.start and parameters.end (RFC 3339); without them it parses the task, else uses the last hour.",
		Priority: 30,
		Examples: []capabilities.OrchestratorExample{
			{Scenario: "RF cavity voltage over the last 2 hours",
				Step: capabilities.PlannedStep{ContextKey: "rf_voltage_history", Capability: "archiver_retrieval",
					TaskObjective: "Retrieve the RF cavity voltages over the last 2 hours", ExpectedOutput: ArchiverDataType,
					Parameters: map[string]any{"duration": "2h"},
					Inputs:     []capabilities.InputRef{{Type: ChannelAddressesType, Key: "rf_voltage_channels"}}}},
		},
	}
}
