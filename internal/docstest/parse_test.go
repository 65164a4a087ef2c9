//go:build unix

package docstest

import (
	"slices"
	"strings"
	"testing"
)

func TestParseBlocksAndMarkers(t *testing.T) {
	md := "# T\n\n<!-- test: run; exit 1; input \"a b\" \"/exit\"; not go run x: needs y; needs npx -->\n```sh\necho hi\n```\n\n" +
		"<!-- test: output -->\n```\nhi\n```\n\n- item\n\n  <!-- test: file conf.yaml -->\n  ```yaml\n  a: 1\n  ```\n\n```go\npackage main\n```\n"
	bs, err := parseBlocks("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 4 {
		t.Fatalf("%d blocks", len(bs))
	}
	run := bs[0].mark
	if run.kind != "run" || run.exit != 1 || !slices.Equal(run.input, []string{"a b", "/exit"}) || len(run.not) != 1 || run.not[0].prefix != "go run x" || !slices.Equal(run.needs, []string{"npx"}) {
		t.Errorf("run marker %+v", run)
	}
	if bs[1].mark.kind != "output" || bs[1].text != "hi\n" {
		t.Errorf("output block %+v", bs[1])
	}
	if bs[2].mark.kind != "file" || bs[2].mark.path != "conf.yaml" || bs[2].text != "a: 1\n" || bs[2].line != 16 {
		t.Errorf("indented file block %+v", bs[2])
	}
	if bs[3].mark.kind != "" || bs[3].info != "go" {
		t.Errorf("unmarked block %+v", bs[3])
	}
	for _, bad := range []string{
		"<!-- test: frobnicate -->\n```sh\nx\n```\n",
		"<!-- test: skip: -->\n```sh\nx\n```\n",
		"<!-- test: run; exit one -->\n```sh\nx\n```\n",
		"<!-- test: output; exit 1 -->\n```\nx\n```\n",
		"<!-- test: run -->\ntext between\n```sh\nx\n```\n",
		"```sh\nnot closed\n",
	} {
		if _, err := parseBlocks("bad.md", bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestCommands(t *testing.T) {
	got := commands("# comment\nexport A=1\n\ncurl -s x \\\n  -d y\ncat > f <<'EOF'\na: 1\n# not a comment\nEOF\necho done   # trailing\n")
	want := []string{"export A=1", "curl -s x \\\n  -d y", "cat > f <<'EOF'\na: 1\n# not a comment\nEOF", "echo done   # trailing"}
	if !slices.Equal(got, want) {
		t.Errorf("commands = %q\nwant %q", got, want)
	}
}

func TestMatchOutput(t *testing.T) {
	got := "banner\n  store: sqlite:/home/you/x.db\nnoise\nthread 01a2b3 (continue with: capgraph chat --thread 01a2b3)\n"
	for _, tt := range []struct {
		want string
		ok   bool
	}{
		{"  store: sqlite:/home/you/x.db\nthread 01a… (continue with: capgraph chat --thread 01a…)", true},
		{"banner\n\n\nnoise", true},
		{"thread …\nbanner", false},               // order matters
		{"  store: sqlite:/home/you/y.db", false}, // exact without "…"
		{"store: …", false},                       // leading spaces count
		{"…continue with: go run …", false},
		{"…", true},
	} {
		if _, ok := matchOutput(tt.want, got); ok != tt.ok {
			t.Errorf("matchOutput(%q) = %v, want %v", tt.want, ok, tt.ok)
		}
	}
}

func TestEchoInput(t *testing.T) {
	out := "banner\nyou> answer 1\nyou> Approval needed: x\napprove? [yes/no] done\nyou> bye\n"
	got := echoInput(out, []string{"q1", "q2", "no", "/exit"})
	want := "banner\nyou> q1\nanswer 1\nyou> q2\nApproval needed: x\napprove? [yes/no] no\ndone\nyou> /exit\nbye\n"
	if got != want {
		t.Errorf("echoInput = %q\nwant %q", got, want)
	}
}

func TestIsServe(t *testing.T) {
	for c, want := range map[string]bool{
		"/x/go-build0/b001/exe/capgraph serve":                   true,
		"CAPGRAPH_API_KEYS=ops=$KEY capgraph serve &":            true,
		"capgraph --store memory serve --resume=false # comment": true,
		"/x/bin/weather serve":                                   true,
		"capgraph run \"serve me\"":                              false,
		"curl -s localhost:8080/serve":                           false,
		"echo capgraph serve":                                    false,
	} {
		if got := isServe(c); got != want {
			t.Errorf("isServe(%q) = %v, want %v", c, got, want)
		}
	}
}

// A benchmark block naming a benchmark, package or program that does not
// exist fails the check.
func TestCheckBench(t *testing.T) {
	repo := repoRoot(t)
	good := &fakeT{T: t}
	checkBench(good, repo, block{file: "x.md", text: "go test ./graph -run '^$' -bench . -benchmem\ncd bench\ngo run ./eino\ngo test ./hub -bench 'Hub|.' -count 3\n"})
	if good.failed {
		t.Errorf("a good block failed: %q", good.msgs)
	}
	for _, text := range []string{
		"go test ./graph -run '^$' -bench NoSuchBenchmarkAnywhere\n",
		"go test ./no/such/package -bench .\n",
		"cd bench\ngo run ./nosuch\n",
		"make bench\n",
	} {
		ft := &fakeT{T: t}
		checkBench(ft, repo, block{file: "x.md", text: text})
		if !ft.failed {
			t.Errorf("%q passed", text)
		}
	}
}

// fakeT records failures instead of failing the test.
type fakeT struct {
	*testing.T
	failed bool
	msgs   []string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.failed = true
	f.msgs = append(f.msgs, strings.TrimSpace(format))
}
