package sqlite

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// States are stored compressed when that saves space: a finished thread
// keeps the state its last turn ended with, a few KiB of JSON, and a row of
// more than half a page gets a page of its own, where compressed ones share
// pages (docs/persistence.md, "What the store keeps"). DEFLATE at its
// fastest level compresses a state of a few KiB to about a third in tens of
// microseconds, on the caller's goroutine, before the write is queued; a
// step's checkpoint that the run's end will prune (checkpoint.Transient) is
// not compressed. klauspost/compress writes the same format as
// compress/flate in half the time, and reads what either wrote.

// deflateMin is the smallest state worth compressing: below it a row shares
// its page with others anyway.
const deflateMin = 512

var deflaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return &deflater{w: w}
}}

type deflater struct {
	buf bytes.Buffer
	w   *flate.Writer
}

// deflateState returns what to store for state and whether it is
// compressed: the compressed bytes when they are smaller by an eighth or
// more, else state itself. The compressed bytes are a copy, so the writer
// (about half a MB, its hash tables) goes back to the pool at once: the pool
// holds as many writers as compress at the same moment, not as many as
// wait for their commit.
func deflateState(state []byte) (stored []byte, deflated bool) {
	if len(state) < deflateMin {
		return state, false
	}
	d := deflaters.Get().(*deflater)
	defer deflaters.Put(d)
	d.buf.Reset()
	d.w.Reset(&d.buf)
	if _, err := d.w.Write(state); err != nil || d.w.Close() != nil || d.buf.Len() > len(state)-len(state)/8 {
		return state, false
	}
	if d.buf.Cap() > 1<<20 {
		d.buf = bytes.Buffer{} // an unusually large state's buffer is not kept
	}
	return bytes.Clone(d.buf.Bytes()), true
}

var inflaters sync.Pool

// inflateState returns the state stored compressed as b.
func inflateState(b []byte) ([]byte, error) {
	r, _ := inflaters.Get().(io.ReadCloser)
	if r == nil {
		r = flate.NewReader(bytes.NewReader(b))
	} else if err := r.(flate.Resetter).Reset(bytes.NewReader(b), nil); err != nil {
		return nil, err
	}
	defer inflaters.Put(r)
	out := bytes.NewBuffer(make([]byte, 0, 4*len(b)))
	if _, err := io.Copy(out, r); err != nil {
		return nil, fmt.Errorf("sqlite: corrupt compressed state: %w", err)
	}
	return out.Bytes(), nil
}
