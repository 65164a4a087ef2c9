package killtest

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
)

func TestParseAck(t *testing.T) {
	id := uuid.New()
	tests := []struct {
		line    string
		want    Ack
		ok, err bool
	}{
		{line: "ACK t001 3 " + id.String(), want: Ack{Thread: "t001", Step: 3, ID: id, Round: 7}, ok: true},
		{line: "ACK t001 x " + id.String(), ok: true, err: true},
		{line: "ACK t001 3 not-a-uuid", ok: true, err: true},
		{line: "WAIT t001"},
		{line: "DONE t001"},
	}
	for _, tt := range tests {
		got, ok, err := ParseAck(tt.line, 7)
		if ok != tt.ok || (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseAck(%q) = %+v, %v, %v; want %+v, %v, error %v", tt.line, got, ok, err, tt.want, tt.ok, tt.err)
		}
	}
}

func TestSayer(t *testing.T) {
	var b bytes.Buffer
	s := NewSayer(&b)
	s.Say("DONE %s", "t1")
	if s.Failed() {
		t.Error("failed after a DONE line")
	}
	s.Say("ERR %s: %v", "t1", "boom")
	if !s.Failed() {
		t.Error("not failed after an ERR line")
	}
	if got, want := b.String(), "DONE t1\nERR t1: boom\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

func TestReport(t *testing.T) {
	id := uuid.New()
	r := NewReport(2, "WAIT", "ASK")
	for _, tc := range []struct {
		line          string
		trigger       bool
		wait, ask     bool
		acks, done, e int
	}{
		{line: "WAIT t1", wait: true},
		{line: "ASK t2", wait: true, ask: true},
		{line: "ACK t1 4 " + id.String(), trigger: true, ask: true, acks: 1},
		{line: "ACK t2 x " + id.String(), ask: true, acks: 1, e: 1},
		{line: "ACK t2 5 " + id.String(), trigger: true, acks: 2, e: 1},
		{line: "DONE t1", acks: 2, done: 1, e: 1},
		{line: "ERR t3: boom", acks: 2, done: 1, e: 2},
		{line: "NOPE t3", acks: 2, done: 1, e: 3},
	} {
		if got := r.Line(tc.line); got != tc.trigger {
			t.Errorf("Line(%q) = %v, want %v", tc.line, got, tc.trigger)
		}
		if r.Pending("WAIT") != tc.wait || r.Pending("ASK") != tc.ask || len(r.Acks) != tc.acks || len(r.Done) != tc.done || len(r.Errs) != tc.e {
			t.Errorf("after %q: wait %v ask %v, %d acks, %d done, errors %q; want %v %v %d %d %d",
				tc.line, r.Pending("WAIT"), r.Pending("ASK"), len(r.Acks), len(r.Done), r.Errs, tc.wait, tc.ask, tc.acks, tc.done, tc.e)
		}
	}
	if want := (Ack{Thread: "t1", Step: 4, ID: id, Round: 2}); r.Acks[0] != want {
		t.Errorf("first ack %+v, want %+v", r.Acks[0], want)
	}
}
