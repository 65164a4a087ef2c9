package sse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Writer writes Server-Sent Events frames and flushes each one.
type Writer struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	lastWrite time.Time
	now       func() time.Time
	// timeout bounds each frame's write (0: none): a client that stops
	// reading cannot hold the handler forever.
	timeout time.Duration
	armed   time.Time // when the write deadline in force was set
	err     error
	// held: frames are written but not flushed until release (follow
	// flushes the frames of the events at hand together).
	held, dirty bool
	buf         []byte // the frame being written, reused
}

// Hold keeps the frames written from now on in the buffer until release.
// A nil writer holds nothing.
func (s *Writer) Hold() {
	if s != nil {
		s.held = true
	}
}

// Release flushes the frames written since hold.
func (s *Writer) Release() {
	if s == nil {
		return
	}
	s.held = false
	if s.dirty {
		s.dirty = false
		s.Flush()
	}
}

// flushFrame flushes a frame just written, unless the writer is held.
func (s *Writer) flushFrame() {
	if s.held {
		s.dirty = true
		return
	}
	s.Flush()
}

// Start sends the stream headers.
func Start(w http.ResponseWriter, now func() time.Time, timeout time.Duration) *Writer {
	s := StartHeld(w, now, timeout)
	s.Release()
	return s
}

// StartHeld is Start for a stream whose first frames are at hand: the
// headers go with them, in one write, at the first Release.
func StartHeld(w http.ResponseWriter, now func() time.Time, timeout time.Duration) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	s := &Writer{w: w, rc: rc, now: now, timeout: timeout, held: true, dirty: true}
	s.deadline()
	return s
}

func (s *Writer) Flush() {
	if err := s.rc.Flush(); err != nil && s.err == nil {
		s.err = err
	}
	s.lastWrite = s.now()
}

// Data writes one "data: <json>" frame.
func (s *Writer) Data(v any) {
	s.Frame("", "", v)
}

// Frame writes an optional id and event name, then data as JSON (a string
// is written raw).
func (s *Writer) Frame(id, event string, v any) {
	if s.err != nil {
		return
	}
	switch x := v.(type) {
	case string:
		frame(s, id, event, x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			s.err = err
			return
		}
		frame(s, id, event, b)
	}
}

// DataJSON writes one "data: <json>" frame of JSON the caller encoded
// (the Chat Completions chunks, written without reflection). It does not
// keep b.
func (s *Writer) DataJSON(b []byte) {
	if s.err == nil {
		frame(s, "", "", b)
	}
}

// frame writes the frame in one Write, built in the writer's buffer.
func frame[T string | []byte](s *Writer, id, event string, data T) {
	b := s.buf[:0]
	if id != "" {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	if event != "" {
		b = append(append(append(b, "event: "...), event...), '\n')
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	s.buf = b
	if cap(b) > 64<<10 {
		s.buf = nil // an unusually large frame's buffer is not kept for the stream's life
	}
	s.deadline()
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return
	}
	s.flushFrame()
}

// Comment writes an SSE comment line, which every SSE parser skips: a
// keep-alive for streams whose clients accept them (Responses; never Chat
// Completions, where go-openai breaks on them).
func (s *Writer) Comment(text string) {
	if s.err != nil {
		return
	}
	s.deadline()
	if _, err := fmt.Fprintf(s.w, ": %s\n\n", text); err != nil {
		s.err = err
		return
	}
	s.flushFrame()
}

// deadline sets the write deadline of the next frame, unless the one in
// force leaves it all but a 64th of the timeout: setting one resets a
// runtime timer, and the frames of a burst (tokens, a turn's closing
// frames) come microseconds apart. A writer without deadlines (a
// recorder) is fine: the error is ignored.
func (s *Writer) deadline() {
	if s.timeout <= 0 {
		return
	}
	// A network deadline: the wall clock, not Config.Now.
	now := time.Now()
	if now.Sub(s.armed) < s.timeout/64 {
		return
	}
	s.armed = now
	_ = s.rc.SetWriteDeadline(now.Add(s.timeout))
}

// Idle reports whether nothing was written for at least d.
func (s *Writer) Idle(d time.Duration) bool { return s.now().Sub(s.lastWrite) >= d }

// Err is the first error writing the stream met (nil while the client
// reads it): the frames after it were not sent.
func (s *Writer) Err() error { return s.err }

// Continue writes frames on a response already started (its status and
// headers sent), without write deadlines, on the wall clock: the last
// frame of a stream whose handler failed.
func Continue(w http.ResponseWriter) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w), now: time.Now}
}
