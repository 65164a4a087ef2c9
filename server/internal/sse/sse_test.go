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
