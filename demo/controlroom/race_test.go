//go:build race

package controlroom_test

// raceEnabled: the test binary runs under the race detector (its
// instrumentation grows every stack frame and allocation).
const raceEnabled = true
