//go:build !race

package server

// raceEnabled: the test binary runs under the race detector (memory and
// time measurements are inflated).
const raceEnabled = false
