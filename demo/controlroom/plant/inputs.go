package plant

import (
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// errNothingFound: the step's CHANNEL_ADDRESSES inputs are channel_finding
// results that found nothing (ChannelAddresses.NotFound). The step has
// nothing to act on and succeeds saying so (nothingDone); the finding
// result already tells the user what does not exist and what does.
var errNothingFound = errors.New("no channel matches the request")

// errUnsupportedAction: the request asks for an action the application
// does not offer; the finding result says so and what it can do.
var errUnsupportedAction = errors.New("the request asks for an action the application does not offer")

// nothingDone is the summary of a step left with no channel to act on
// (err is stepChannels' errNothingFound).
func nothingDone(verb string, err error) string {
	if errors.Is(err, errUnsupportedAction) {
		return "Nothing was " + verb + "."
	}
	return "Nothing was " + verb + ", since no channel matches the request."
}

// stepChannels returns the channels a step works on: every resolved
// CHANNEL_ADDRESSES input, merged, or a "channels" parameter. It fails with
// errNothingFound when the inputs found no channel, and with
// capabilities.ErrMissingInput when there are no channels otherwise.
func stepChannels(step capabilities.Step) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	addrs, err := ChannelAddressesKey.Inputs(step)
	if err != nil && !errors.Is(err, capabilities.ErrMissingInput) {
		return nil, err
	}
	for _, a := range addrs {
		for _, c := range a.Channels {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		names, perr := capabilities.Param[[]string](step, "channels", nil)
		if perr != nil {
			return nil, perr
		}
		for _, c := range names {
			c = strings.ToUpper(strings.TrimSpace(c))
			if c != "" && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		for _, a := range addrs {
			if a.NotFound != nil && a.NotFound.Unsupported != "" {
				return nil, fmt.Errorf("%w: %w", errNothingFound, errUnsupportedAction)
			}
			if a.NotFound != nil {
				return nil, fmt.Errorf("%w: %s", errNothingFound, a.NotFound.Explain())
			}
		}
		return nil, fmt.Errorf("%w: step %q has no %s input and no channels parameter", capabilities.ErrMissingInput, step.ContextKey, ChannelAddressesType)
	}
	return out, nil
}

// stepTexts lists the texts a capability may parse, most specific first:
// the step's objective, then the turn's task. Offline plans carry no
// parameters, so capabilities read what they need from these.
func stepTexts(step capabilities.Step) []string {
	obj, task := strings.TrimSpace(step.TaskObjective), strings.TrimSpace(step.Task)
	if task != "" && strings.Contains(obj, task) {
		// An objective that only wraps the task ("Provide X for: <task>")
		// adds words that are not the user's.
		return []string{task}
	}
	var out []string
	for _, s := range []string{step.TaskObjective, step.Task} {
		if s = strings.TrimSpace(s); s != "" && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}

// readChannels returns the channels a step (channel_read,
// archiver_retrieval, channel_write) works on: stepChannels, except when the request is a
// follow-up whose latest message names another detail than the channels
// the step was given (an earlier turn's, which the plan reused): "and the
// temperature?" after "vacuum in sector 4" reads the sector 4
// temperatures, not the vacuum again. Those channels are found for the
// resolved request.
//
// found is the finding made for the resolved request (nil when the step's
// own channels are used): the step returns it too, so the answer and the
// next follow-up see the channels it read.
func (p *Plant) readChannels(step capabilities.Step) (chans []string, found *ChannelAddresses, err error) {
	chans, err = stepChannels(step)
	for _, t := range stepTexts(step) {
		_, followUps := splitFollowUps(t)
		if len(followUps) == 0 || len(p.index.details(followUps[len(followUps)-1])) == 0 {
			continue
		}
		resolved := p.ResolveFollowUps(t)
		addrs, _ := ChannelAddressesKey.Inputs(step)
		for _, a := range addrs {
			if a.Query == resolved {
				return chans, nil, err
			}
		}
		if res, ferr := p.Find(resolved, DefaultMaxMatches); ferr == nil && len(res.Channels) > 0 {
			a := ChannelAddresses{Query: res.Query, Channels: res.Channels, Truncated: res.Truncated, Descriptions: map[string]string{}}
			for _, c := range res.Channels {
				if ch, ok := p.Channel(c); ok {
					a.Descriptions[c] = ch.Description
				}
			}
			return res.Channels, &a, nil
		}
		break
	}
	return chans, nil, err
}

// withFound adds a step's own finding to its output, under the step's
// context key with "_channels" appended.
func withFound(out capabilities.Output, step capabilities.Step, found *ChannelAddresses) capabilities.Output {
	if found == nil {
		return out
	}
	out.Values = append([]capabilities.ContextValue{{Type: ChannelAddressesType, Key: step.ContextKey + "_channels", Value: *found, Summary: found.Summary()}}, out.Values...)
	return out
}
