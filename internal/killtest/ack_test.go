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
