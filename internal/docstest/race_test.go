//go:build race

package docstest

// raceEnabled: the test binary runs under the race detector.
const raceEnabled = true
