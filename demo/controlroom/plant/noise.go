package plant

import (
	"hash/fnv"
	"math"
	"time"
)

// drift period of every channel; phases differ by channel.
const driftPeriod = 6 * time.Hour

// unitNoise returns a deterministic value in [-1, 1) for (seed, channel,
// second): the same inputs always give the same value, so a reading and the
// archive agree and tests can assert exact numbers.
func unitNoise(seed int64, channel string, sec int64) float64 {
	x := uint64(seed) ^ nameHash(channel) ^ uint64(sec)*0x9E3779B97F4A7C15
	// splitmix64 finaliser
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return float64(x>>11)/float64(1<<52) - 1
}

func nameHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// driftAt returns the slow drift factor in [-1, 1] at t.
func driftAt(channel string, t time.Time) float64 {
	phase := float64(nameHash(channel)%1000) / 1000 * 2 * math.Pi
	return math.Sin(2*math.Pi*float64(t.UnixNano())/float64(driftPeriod) + phase)
}
