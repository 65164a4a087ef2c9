package plant

import (
	"fmt"

	"github.com/capgraph/capgraph/capabilities"
)

// Capabilities returns the four control-room capabilities over p, in
// pipeline order: channel_finding, channel_read, archiver_retrieval,
// channel_write.
func Capabilities(p *Plant) []capabilities.Capability {
	return []capabilities.Capability{NewChannelFinding(p), NewChannelRead(p), NewArchiverRetrieval(p), NewChannelWrite(p)}
}

// Register adds the control-room capabilities to reg.
func Register(reg *capabilities.Registry, p *Plant) error {
	if err := reg.Register(Capabilities(p)...); err != nil {
		return fmt.Errorf("plant: %w", err)
	}
	return nil
}
