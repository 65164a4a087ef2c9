package cli

import (
	"strconv"
	"strings"

	"github.com/capgraph/capgraph/artifactview"
	"github.com/capgraph/capgraph/capabilities"
)

// The terminal shows a turn's artifacts after its answer: a compact table
// each, a time series as a line per channel with a sparkline and its
// minimum, maximum and last value (artifactview.Text).

// defaultArtifactWidth is the width artifacts are written for when the
// environment does not say (COLUMNS).
const defaultArtifactWidth = 100

// artifactText is the artifacts as the terminal shows them ("" for none).
func (c *cmdEnv) artifactText(arts []capabilities.Artifact) string {
	if len(arts) == 0 {
		return ""
	}
	width := defaultArtifactWidth
	if n, err := strconv.Atoi(strings.TrimSpace(c.env.Getenv("COLUMNS"))); err == nil && n >= 40 {
		width = n
	}
	return artifactview.Text(arts, width)
}

// keepArtifact adds an artifact event's artifact to arts, replacing one
// with the same id (a step run again after a crash sends it again).
func keepArtifact(arts []capabilities.Artifact, a *capabilities.Artifact) []capabilities.Artifact {
	if a == nil {
		return arts
	}
	for i := range arts {
		if arts[i].ID == a.ID {
			arts[i] = *a
			return arts
		}
	}
	return append(arts, *a)
}
