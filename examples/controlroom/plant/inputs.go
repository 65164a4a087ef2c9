package plant

import (
	"errors"
	"fmt"
	"strings"

	"github.com/capgraph/capgraph/capabilities"
)

// stepChannels returns the channels a step works on: every resolved
// CHANNEL_ADDRESSES input, merged, or a "channels" parameter. It fails with
// capabilities.ErrMissingInput when there are none.
func stepChannels(step capabilities.Step) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	addrs, err := capabilities.Inputs[ChannelAddresses](step, ChannelAddressesType)
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
