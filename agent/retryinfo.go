package agent

import "fmt"

// What names what is retried, for a status line: "step 2 (channel_read)"
// for a plan step, the node's name for an infrastructure node.
func (r RetryInfo) What() string {
	if r.Step < 0 || r.Capability == "" {
		return r.Node
	}
	return fmt.Sprintf("step %d (%s)", r.Step+1, r.Capability)
}
