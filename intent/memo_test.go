package intent

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A remembered finding is the rules' own answer, and what one caller does
// with its copy never reaches the next.
func TestFromMessageRemembersWithoutSharing(t *testing.T) {
	for _, msg := range []string{
		"set Q1 to 105 A and Q2 to 98 A",
		"raise it by 5 %",
		"restore Q1 to yesterday's value",
		"what is the beam current?",
	} {
		want := fromMessage(msg)
		first := FromMessage(msg)
		for i := range first.Intent.Changes {
			c := &first.Intent.Changes[i]
			c.Refers, c.Target = "changed by a caller", "changed by a caller"
			if c.Value != nil {
				*c.Value = -1
			}
			if c.By != nil {
				*c.By = -1
			}
		}
		first.Intent.Changes = append(first.Intent.Changes, RequestedChange{Target: "appended"})
		if got := FromMessage(msg); !reflect.DeepEqual(got, want) {
			t.Errorf("FromMessage(%q) after a caller changed its copy = %+v, want the rules' %+v", msg, got, want)
		}
	}
}

// clone copies every pointer a RequestedChange holds: a field added later
// that shares memory must be cloned too, or this fails.
func TestFindingCloneCoversEveryReference(t *testing.T) {
	cloned := map[string]bool{"Value": true, "By": true}
	rt := reflect.TypeFor[RequestedChange]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		switch f.Type.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func:
			if !cloned[f.Name] {
				t.Errorf("RequestedChange.%s is a reference Finding.clone does not copy", f.Name)
			}
		}
	}
	if rt := reflect.TypeFor[Intent](); rt.NumField() != 3 {
		t.Errorf("Intent has %d fields; Finding.clone copies Changes and knows of 3", rt.NumField())
	}
}

// The memo stays within memoSize however many messages pass, and a long
// message is never kept.
func TestFindingsMemoIsBounded(t *testing.T) {
	var c memo
	c.m = map[string]Finding{}
	for i := range memoSize + 100 {
		c.put(fmt.Sprintf("set Q%d to %d A", i, i), Finding{})
		if len(c.m) > memoSize {
			t.Fatalf("memo holds %d findings, bound %d", len(c.m), memoSize)
		}
	}
	long := string(make([]byte, MaxChangeMessage+1))
	c.put(long, Finding{})
	if _, ok := c.get(long); ok {
		t.Error("a message longer than MaxChangeMessage was remembered")
	}
}

func BenchmarkFromMessage(b *testing.B) {
	const msg = "Please set the BTS quadrupole Q1 current to 105 A and check the orbit afterwards"
	b.Run("rules", func(b *testing.B) {
		for b.Loop() {
			fromMessage(msg)
		}
	})
	b.Run("remembered", func(b *testing.B) {
		for b.Loop() {
			FromMessage(msg)
		}
	})
	// The longest message the rules read, a change in every clause: what
	// a client can make them cost.
	longest := strings.Repeat("set Q1 to 5 A, ", MaxChangeMessage/15)
	b.Run("longest", func(b *testing.B) {
		for b.Loop() {
			fromMessage(longest)
		}
	})
}

// BenchmarkFromMessageQuestion: the rules on a question seen for the first
// time (the load tool's, which tags each one), as every turn's first call
// reads it.
func BenchmarkFromMessageQuestion(b *testing.B) {
	for b.Loop() {
		fromMessage("whats the beam current right now? [load 17-42]")
	}
}
