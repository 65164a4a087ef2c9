package transcripts

import "testing"

func TestTranscriptIndex(t *testing.T) {
	x := NewIndex(2)
	x.Set("a", "A", "d1")
	x.Add("a", "A", "d2")
	if ct, ok := x.Get("d1"); !ok || ct != "a" {
		t.Fatal("d1")
	}
	x.Set("a", "A", "d3") // the thread moved on: its old digests go
	if _, ok := x.Get("d1"); ok {
		t.Fatal("an old digest still names the thread")
	}
	x.Set("b", "B", "e1")
	x.Set("c", "C", "f1") // over the size: the oldest thread goes
	if _, ok := x.Get("d3"); ok {
		t.Fatal("the oldest thread was kept")
	}
	if _, ok := x.Get("e1"); !ok {
		t.Fatal("a newer thread was dropped")
	}
	x.Forget("B")
	if _, ok := x.Get("e1"); ok || len(x.byThread) != 1 || len(x.order) != 1 {
		t.Fatalf("forget left %v %v", x.byThread, x.order)
	}
}
