package checkpoint_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

func TestValidateCheckpoint(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	ok := checkpoint.Checkpoint{ThreadID: "t", ID: id, Next: []string{"a"}, Metadata: map[string]string{"k": "v"}}
	with := func(f func(*checkpoint.Checkpoint)) checkpoint.Checkpoint { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name  string
		cp    checkpoint.Checkpoint
		field string // "" = valid
	}{
		{"valid", ok, ""},
		{"empty thread", with(func(c *checkpoint.Checkpoint) { c.ThreadID = "" }), "thread_id"},
		{"nil id", with(func(c *checkpoint.Checkpoint) { c.ID = uuid.Nil }), "id"},
		{"negative step", with(func(c *checkpoint.Checkpoint) { c.Step = -1 }), "step"},
		{"NUL thread", with(func(c *checkpoint.Checkpoint) { c.ThreadID = "a\x00" }), "thread_id"},
		{"bad next", with(func(c *checkpoint.Checkpoint) { c.Next = []string{"a", "\xff"} }), "next[1]"},
		{"bad metadata key", with(func(c *checkpoint.Checkpoint) { c.Metadata = map[string]string{"a": "v", "\xff": "v"} }), `metadata key "\xff"`},
		{"bad metadata value", with(func(c *checkpoint.Checkpoint) { c.Metadata = map[string]string{"z": "\x00", "b": "\xff"} }), `metadata["b"]`},
	} {
		err := checkpoint.ValidateCheckpoint(tc.cp)
		var ie *checkpoint.InvalidError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ie) || !errors.Is(err, checkpoint.ErrInvalid) || ie.Field != tc.field):
			t.Errorf("%s: err = %v, want InvalidError on %s", tc.name, err, tc.field)
		}
	}
}

func TestValidateWrites(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	w := func(task, kind string) checkpoint.Write {
		return checkpoint.Write{Task: task, Kind: checkpoint.WriteKind(kind)}
	}
	for _, tc := range []struct {
		name   string
		thread string
		id     uuid.UUID
		ws     []checkpoint.Write
		field  string
	}{
		{"valid", "t", id, []checkpoint.Write{w("a", "update")}, ""},
		{"no writes", "t", id, nil, ""},
		{"empty thread", "", id, nil, "thread_id"},
		{"nil id", "t", uuid.Nil, nil, "checkpoint_id"},
		{"empty task", "t", id, []checkpoint.Write{w("a", "update"), w("", "update")}, "writes[1].task"},
		{"empty kind", "t", id, []checkpoint.Write{w("a", "")}, "writes[0].kind"},
		{"NUL task", "t", id, []checkpoint.Write{w("a\x00", "update")}, "writes[0].task"},
		{"bad kind", "t", id, []checkpoint.Write{w("a", "\xff")}, "writes[0].kind"},
	} {
		err := checkpoint.ValidateWrites(tc.thread, tc.id, tc.ws)
		var ie *checkpoint.InvalidError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field):
			t.Errorf("%s: err = %v, want InvalidError on %s", tc.name, err, tc.field)
		}
	}
}

func BenchmarkValidateCheckpoint(b *testing.B) {
	cp := checkpoint.Checkpoint{ThreadID: "t", ID: uuid.Must(uuid.NewV7()), Next: []string{"a", "b"}, Metadata: map[string]string{"owner": "x"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkpoint.ValidateCheckpoint(cp); err != nil {
			b.Fatal(err)
		}
	}
}
