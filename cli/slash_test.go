package cli

import (
	"flag"
	"io"
	"reflect"
	"testing"

	"github.com/capgraph/capgraph/state"
)

func TestParseSlash(t *testing.T) {
	base := state.Options{ApprovalMode: "selective"}
	tests := []struct {
		line    string
		msg     string
		opts    state.Options
		actions []slashKind
		err     string
	}{
		{line: "What is the beam current?", msg: "What is the beam current?", opts: base},
		{line: "/planning", opts: state.Options{ApprovalMode: "selective", PlanApproval: true}},
		{line: "/planning:off", opts: base},
		{line: "/approval on", opts: state.Options{ApprovalMode: "all_capabilities"}},
		{line: "/approval:off", opts: state.Options{ApprovalMode: "disabled"}},
		{line: "/approval selective read it", msg: "read it", opts: base},
		{line: "/caps:off read the BPMs", msg: "read the BPMs", opts: state.Options{ApprovalMode: "selective", SkipClassification: true}},
		{line: "/task:off /caps:on", opts: state.Options{ApprovalMode: "selective", SkipTaskExtraction: true}},
		{line: "/status /help", opts: base, actions: []slashKind{slashStatus, slashHelp}},
		{line: "/clear", opts: base, actions: []slashKind{slashClear}},
		{line: "/EXIT", opts: base, actions: []slashKind{slashExit}},
		{line: "divide 6 / 3", msg: "divide 6 / 3", opts: base},
		{line: "/approval:maybe", err: "/approval:maybe: the value must be on, off or selective"},
		{line: "/planning:later", err: "/planning:later: the value must be on or off"},
		{line: "/frobnicate", err: "unknown command /frobnicate (try /help)"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			r, err := parseSlash(tt.line, base)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Message != tt.msg || r.Options != tt.opts || !reflect.DeepEqual(r.Actions, tt.actions) {
				t.Errorf("got msg %q opts %+v actions %v; want %q %+v %v", r.Message, r.Options, r.Actions, tt.msg, tt.opts, tt.actions)
			}
		})
	}
}

func TestParseArgsInterspersed(t *testing.T) {
	tests := []struct {
		args  []string
		pos   []string
		store string
	}{
		{[]string{"q"}, []string{"q"}, ""},
		{[]string{"--store", "memory", "q"}, []string{"q"}, "memory"},
		{[]string{"q", "--store", "memory"}, []string{"q"}, "memory"},
		{[]string{"a", "--store=memory", "b"}, []string{"a", "b"}, "memory"},
		{[]string{"--", "--store", "x"}, []string{"--store", "x"}, ""},
	}
	for _, tt := range tests {
		var g globalFlags
		fs := newTestFlagSet(&g)
		pos, err := parseArgs(fs, tt.args)
		if err != nil || !reflect.DeepEqual(pos, tt.pos) || g.store != tt.store {
			t.Errorf("%q: pos %q store %q err %v; want %q %q", tt.args, pos, g.store, err, tt.pos, tt.store)
		}
	}
}

func newTestFlagSet(g *globalFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	return fs
}
