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

func TestFramesHaveWriteDeadlines(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		want    int // deadlines set for the start and two frames
	}{
		{"bounded", 30 * time.Second, 3},
		{"unbounded", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			before := time.Now()
			s := Start(w, time.Now, tc.timeout)
			s.Data(map[string]int{"a": 1})
			s.Frame("2", "x", "{}")
			if len(w.deadlines) != tc.want {
				t.Fatalf("%d deadlines, want %d", len(w.deadlines), tc.want)
			}
			for _, d := range w.deadlines {
				if d.Before(before.Add(tc.timeout)) || d.After(time.Now().Add(tc.timeout)) {
					t.Fatalf("deadline %v not %v after the write", d, tc.timeout)
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
