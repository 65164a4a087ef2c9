package graph

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/google/uuid"
)

// idGen makes UUIDv7s (RFC 9562) that are strictly increasing within this
// process, so checkpoint ids sort by creation time even when several are made
// in the same millisecond. It replaces uuid.NewV7, which reads 16 bytes from
// crypto/rand per id and was the largest single cost of a transition.
//
// Layout: 48-bit Unix milliseconds, version 7, a 12-bit counter in rand_a
// (RFC 9562 §6.2 method 1, started at a random value in the lower half each
// millisecond), the variant, and 62 random bits from math/rand/v2's
// ChaCha8-based generator (seeded by the runtime from the OS), which keeps ids
// from different processes apart. When the counter overflows within one
// millisecond the timestamp is advanced by one, as §6.2 allows; it falls back
// to the clock as soon as the clock catches up.
type idGen struct {
	mu  sync.Mutex
	ms  int64
	seq uint16
}

var ids idGen

func (g *idGen) next(now time.Time) uuid.UUID {
	ms := now.UnixMilli()
	g.mu.Lock()
	if ms > g.ms {
		g.ms, g.seq = ms, uint16(rand.Uint32()&0x7ff)
	} else {
		g.seq++
		if g.seq > 0xfff {
			g.ms, g.seq = g.ms+1, 0
		}
	}
	ms, seq := g.ms, g.seq
	g.mu.Unlock()

	var id uuid.UUID
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], uint64(ms))
	copy(id[0:6], ts[2:8])
	id[6] = 0x70 | byte(seq>>8)
	id[7] = byte(seq)
	binary.BigEndian.PutUint64(id[8:], rand.Uint64())
	id[8] = 0x80 | id[8]&0x3f
	return id
}

// newID returns a UUIDv7 from the process-wide generator, so checkpoint ids
// sort by creation time.
func newID() uuid.UUID { return ids.next(time.Now()) }

// newIDAt is newID with a clock reading the caller already has (a step reads
// the clock once). Whatever the clock says, even if it stands still or goes
// back, ids stay unique and increasing: the generator never lets its
// millisecond go backwards.
func newIDAt(now time.Time) uuid.UUID { return ids.next(now) }
