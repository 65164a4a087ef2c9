package state_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/intent"
	"github.com/capgraph/capgraph/state"
)

// filler sets every exported field of a value to random data, so a field
// added to State and not to its hand-written encoder fails the comparison.
type filler struct {
	r     *rand.Rand
	depth int
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	pieces   = []string{"", "", "beam current", "SR:DCCT:current", "<b>&amp;</b>", `"quoted" \ back`, "line\nnext\ttab\r",
		"\b\f\x00\x01\x1f\x7f", "500 µA, 3 °C", "\u2028\u2029", "\xff\xfe broken", "é\U0001F600", "a\xe2\x80"}
)

func (f *filler) str() string {
	s := pieces[f.r.IntN(len(pieces))]
	if f.r.IntN(3) == 0 {
		s += pieces[f.r.IntN(len(pieces))]
	}
	return s
}

func (f *filler) time() time.Time {
	if f.r.IntN(200) == 0 {
		return time.Date(10000+f.r.IntN(5), 1, 1, 0, 0, 0, 0, time.UTC) // MarshalJSON refuses it
	}
	switch f.r.IntN(8) {
	case 0, 1:
		return time.Time{}
	case 2:
		return time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).In(time.FixedZone("X", (f.r.IntN(48)-24)*1800))
	case 3:
		return time.Unix(f.r.Int64N(4e9), 0).UTC()
	case 4: // early years, a zone at offset zero that is not UTC, round fractions
		return time.Date(f.r.IntN(1200), time.Month(1+f.r.IntN(12)), 1+f.r.IntN(28), f.r.IntN(24), f.r.IntN(60), f.r.IntN(60),
			[]int{0, 5e8, 120e6, 1, 999999999}[f.r.IntN(5)], time.FixedZone("GMT", 0))
	default:
		return time.Unix(f.r.Int64N(4e9), f.r.Int64N(1e9)).UTC()
	}
}

func (f *filler) any() any {
	if f.depth > 3 {
		return f.str()
	}
	f.depth++
	defer func() { f.depth-- }()
	switch f.r.IntN(7) {
	case 0:
		return nil
	case 1:
		return f.str()
	case 2:
		return f.r.NormFloat64() * 1e6
	case 3:
		return f.r.IntN(2) == 0
	case 4:
		return []any{f.any(), f.any()}
	default:
		return map[string]any{f.str(): f.any(), "k": f.any()}
	}
}

func (f *filler) fill(v reflect.Value) {
	t := v.Type()
	switch {
	case t == timeType:
		v.Set(reflect.ValueOf(f.time()))
		return
	case t == rawType:
		switch f.r.IntN(5) {
		case 0: // nil: "null"
		case 1:
			b, _ := json.MarshalIndent(f.any(), "", "  ") // compacted when encoded
			v.SetBytes(b)
		default:
			b, _ := json.Marshal(f.any())
			v.SetBytes(b)
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		if f.r.IntN(3) > 0 {
			v.SetInt(f.r.Int64N(1<<40) - 1<<39)
		}
	case reflect.Uint8, reflect.Uint, reflect.Uint64:
		v.SetUint(uint64(f.r.IntN(8)))
	case reflect.Float64:
		v.SetFloat(f.r.NormFloat64() * 1e3)
	case reflect.Interface:
		if a := f.any(); a != nil {
			v.Set(reflect.ValueOf(a))
		}
	case reflect.Pointer:
		if f.depth < 4 && f.r.IntN(3) > 0 {
			p := reflect.New(t.Elem())
			f.depth++
			f.fill(p.Elem())
			f.depth--
			v.Set(p)
		}
	case reflect.Slice:
		switch n := f.r.IntN(5); {
		case n == 0: // nil
		case n == 1 || f.depth >= 4:
			v.Set(reflect.MakeSlice(t, 0, 0))
		default:
			s := reflect.MakeSlice(t, n-1, n-1)
			f.depth++
			for i := range n - 1 {
				f.fill(s.Index(i))
			}
			f.depth--
			v.Set(s)
		}
	case reflect.Map:
		switch n := f.r.IntN(5); {
		case n == 0: // nil
		case n == 1 || f.depth >= 4:
			v.Set(reflect.MakeMap(t))
		default:
			m := reflect.MakeMap(t)
			f.depth++
			for range n {
				k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
				f.fill(k)
				f.fill(e)
				m.SetMapIndex(k, e)
			}
			f.depth--
			v.Set(m)
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	default:
		panic("filler: no case for " + t.String())
	}
}

// TestAppendJSONMatchesMarshal: State.AppendJSON gives exactly json.Marshal's
// bytes (or an error when it fails) for random states with every field set
// or left zero, so checkpoints read the same whichever encoded them.
func TestAppendJSONMatchesMarshal(t *testing.T) {
	f := &filler{r: rand.New(rand.NewPCG(16, 1))}
	errs := 0
	for i := range 3000 {
		var s state.State
		f.fill(reflect.ValueOf(&s).Elem())
		want, werr := json.Marshal(&s)
		got, gerr := s.AppendJSON(nil)
		if werr != nil {
			errs++
			if gerr == nil {
				t.Fatalf("state %d: json.Marshal fails (%v), AppendJSON does not", i, werr)
			}
			continue
		}
		if gerr != nil {
			t.Fatalf("state %d: AppendJSON: %v", i, gerr)
		}
		if !bytes.Equal(got, want) {
			at := 0
			for at < len(got) && at < len(want) && got[at] == want[at] {
				at++
			}
			t.Fatalf("state %d differs from json.Marshal at byte %d (a field missing from state/encode.go?)\n got …%s\nwant …%s",
				i, at, got[max(0, at-80):min(len(got), at+80)], want[max(0, at-80):min(len(want), at+80)])
		}
	}
	if errs == 0 || errs > 2000 {
		t.Fatalf("%d of 3000 states failed to encode; the filler should make some, not most, fail", errs)
	}
}

// TestAppendJSONTurnState: a turn's state as the agent writes it, appended
// to a buffer already holding bytes, equals json.Marshal and decodes back.
func TestAppendJSONTurnState(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 16, 20, 95254341, time.UTC)
	s := state.NewTurn(state.State{}, "whats the avg beam current last hr?", state.Options{}, at)
	s.Metadata = map[string]string{"graph_version": "710eb0ec0e025d77", "owner": "ops"}
	s.Turn.Task = &state.Task{Text: "What is the mean beam current?", Intent: intent.Intent{Kind: intent.KindRead}}
	s.Turn.Control.TokensByRole = map[string]int{"task_extraction": 314, "classifier": 156}
	want, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.AppendJSON([]byte("prefix"))
	if err != nil || string(got) != "prefix"+string(want) {
		t.Fatalf("AppendJSON = %s, %v; want prefix%s", got, err, want)
	}
	var back state.State
	if err := json.Unmarshal(got[len("prefix"):], &back); err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("decoded %+v, %v; want %+v", back, err, s)
	}
}

// FuzzAppendJSONString: any text in a message (and so any string the
// encoder writes) is quoted as encoding/json quotes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, p := range pieces {
		f.Add(p, []byte(`{"a": [1, "<x>"]}`))
	}
	// Values written as is: spaces inside strings only, an escaped quote
	// or backslash before the string's end, and their near misses.
	for _, raw := range []string{`{"a":"b c","d":[1,"e f"]}`, `"a\" b"`, `"a\\" `, `["x\\"," y"]`, `{"a":"\u003cb\u003e"}`,
		`{"a" :1}`, `["\"", 1 ]`, "[1,\n2]", `"\"<"`, "\"\u2028\"", `"tab\tinside"`} {
		f.Add("text", []byte(raw))
	}
	f.Fuzz(func(t *testing.T, text string, raw []byte) {
		s := state.State{Messages: []state.Message{{Role: state.RoleUser, Content: text}},
			Metadata: map[string]string{text: text}}
		if json.Valid(raw) {
			s.Context = capabilities.ContextStore{text: {"k": {Type: text, Value: raw}}}
		}
		want, werr := json.Marshal(&s)
		got, gerr := s.AppendJSON(nil)
		if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %q, %v; json.Marshal = %q, %v", got, gerr, want, werr)
		}
	})
}

// turnState is the last state of the turn of docs/performance.md ("A turn
// without the model"), as stored.
func turnState(tb testing.TB) ([]byte, state.State) {
	tb.Helper()
	b, err := os.ReadFile("testdata/turn_state.json")
	if err != nil {
		tb.Fatal(err)
	}
	b = bytes.TrimSpace(b)
	var s state.State
	if err := json.Unmarshal(b, &s); err != nil {
		tb.Fatal(err)
	}
	return b, s
}

// TestAppendJSONStoredTurn: the stored form of a whole turn's state is
// written back byte for byte.
func TestAppendJSONStoredTurn(t *testing.T) {
	stored, s := turnState(t)
	if got, err := s.AppendJSON(nil); err != nil || !bytes.Equal(got, stored) {
		t.Fatalf("AppendJSON = %s, %v; want %s", got, err, stored)
	}
}

// BenchmarkEncodeState: a turn's last state (3.2 KB) by AppendJSON and by
// encoding/json.
func BenchmarkEncodeState(b *testing.B) {
	_, s := turnState(b)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = s.AppendJSON(buf[:0])
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(&s)
		}
	})
}
