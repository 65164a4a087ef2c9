package sse

import (
	"net/http/httptest"
	"testing"
	"time"
)

// deadlineRecorder is a ResponseWriter that records write deadlines, as
// http.ResponseController sets them.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

func (d *deadlineRecorder) FlushError() error { d.Flush(); return nil }

// Every frame is written under a deadline at least 63/64 of the timeout
// away; the frames of a burst share the one set for the first (setting
// one costs a timer reset), and a frame after a pause gets its own.
func TestFramesHaveWriteDeadlines(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		pause   time.Duration // before the last frame
		want    int           // deadlines set for the start and three frames
	}{
		{"a burst", 30 * time.Second, 0, 1},
		{"a pause", 64 * time.Millisecond, 2 * time.Millisecond, 2},
		{"unbounded", 0, 2 * time.Millisecond, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			var written []time.Time // when each frame was written
			s := Start(w, time.Now, tc.timeout)
			written = append(written, time.Now())
			s.Data(map[string]int{"a": 1})
			s.Frame("2", "x", "{}")
			written = append(written, time.Now(), time.Now())
			time.Sleep(tc.pause)
			s.Data("last")
			written = append(written, time.Now())
			if len(w.deadlines) != tc.want {
				t.Fatalf("%d deadlines, want %d", len(w.deadlines), tc.want)
			}
			if tc.timeout > 0 {
				// The deadline in force at each write: the latest set before it.
				for _, at := range written {
					var inForce time.Time
					for _, d := range w.deadlines {
						if !d.Add(-tc.timeout).After(at) {
							inForce = d
						}
					}
					if left := inForce.Sub(at); left < tc.timeout-tc.timeout/64 {
						t.Errorf("a frame written with %v of its deadline left, want at least %v", left, tc.timeout-tc.timeout/64)
					}
				}
			}
			if s.Err() != nil || w.Body.Len() == 0 {
				t.Fatalf("err %v body %q", s.Err(), w.Body)
			}
		})
	}
}

// flushCounter counts the flushes that reach the connection.
type flushCounter struct {
	*httptest.ResponseRecorder
	flushes int
	// bodyAtFirst is the body as the first flush sent it.
	bodyAtFirst string
}

func (f *flushCounter) FlushError() error {
	if f.flushes++; f.flushes == 1 {
		f.bodyAtFirst = f.Body.String()
	}
	f.Flush()
	return nil
}

// A held start sends the headers with the first frames, in one flush;
// Start flushes the headers alone, then each frame.
func TestStartHeldSendsTheHeadersWithTheFirstFrames(t *testing.T) {
	held := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	s := StartHeld(held, time.Now, time.Second)
	s.Data("a")
	s.Data("b")
	if held.flushes != 0 || held.Code != 200 || held.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("before release: %d flushes, status %d, %q; want none yet, the headers set", held.flushes, held.Code, held.Header().Get("Content-Type"))
	}
	s.Release()
	s.Release() // nothing new: no flush
	if held.flushes != 1 || held.bodyAtFirst != "data: a\n\ndata: b\n\n" {
		t.Fatalf("%d flushes, the first sending %q; want 1 with both frames", held.flushes, held.bodyAtFirst)
	}
	s.Data("c") // released: flushed at once
	if held.flushes != 2 {
		t.Fatalf("%d flushes after a frame written released, want 2", held.flushes)
	}

	plain := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	s = Start(plain, time.Now, time.Second)
	if plain.flushes != 1 || plain.bodyAtFirst != "" {
		t.Fatalf("Start: %d flushes (first body %q), want the headers flushed alone", plain.flushes, plain.bodyAtFirst)
	}
	s.Data("a")
	if plain.flushes != 2 {
		t.Fatalf("%d flushes after a frame, want 2", plain.flushes)
	}
}
