package layers

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/capgraph/capgraph"

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
}

// list runs `go list -json` over the module's packages (with their
// dependencies, Deps, and their tests' imports).
func list(t *testing.T) map[string]pkg {
	t.Helper()
	// go test puts the toolchain running the test first in its PATH.
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; run from the module", len(pkgs))
	}
	return pkgs
}

// under reports whether path is dir or below it ("graph" covers graph/checkpoint).
func under(path, dir string) bool {
	dir = module + "/" + dir
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// program reports whether a package is a program or the demo application,
// which may import anything; everything else is the library.
func program(path string) bool {
	return under(path, "cmd") || under(path, "examples") || under(path, "demo") || under(path, "internal/replicas/replicaapp")
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// allImports is what a package and its tests import directly.
func (p pkg) allImports() []string {
	return slices.Concat(p.Imports, p.TestImports, p.XTestImports)
}

func TestLayers(t *testing.T) {
	pkgs := list(t)
	get := func(path string) pkg {
		p, ok := pkgs[module+"/"+path]
		if !ok {
			t.Fatalf("no package %s", path)
		}
		return p
	}
	rules := []struct {
		name string
		// pkgs selects the packages the rule is about.
		pkgs func(p pkg) bool
		// of lists what the rule looks at (imports, deps) …
		of func(p pkg) []string
		// … and bad says which of those break it.
		bad func(dep string) bool
	}{
		{"graph knows nothing of agents: its packages depend on no capgraph package outside graph/ but runstore (the run records its stores keep beside the checkpoints)",
			func(p pkg) bool { return under(p.ImportPath, "graph") && !strings.HasSuffix(p.ImportPath, "/pgtest") },
			func(p pkg) []string { return p.Deps },
			func(d string) bool {
				return strings.HasPrefix(d, module+"/") && !under(d, "graph") && d != module+"/runstore"
			}},
		{"runstore imports only the standard library (every store implements it, the engine's among them)",
			func(p pkg) bool { return p.ImportPath == module+"/runstore" },
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return !isStd(d) }},
		{"capabilities, typo and internal/jsonquote import only the standard library",
			func(p pkg) bool {
				return p.ImportPath == module+"/capabilities" || p.ImportPath == module+"/typo" || p.ImportPath == module+"/internal/jsonquote"
			},
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return !isStd(d) }},
		{"intent imports only the standard library, capabilities and typo (state imports it, not the reverse)",
			func(p pkg) bool { return p.ImportPath == module+"/intent" },
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return !isStd(d) && d != module+"/capabilities" && d != module+"/typo" }},
		{"router depends on no LLM code (neither llm nor langchaingo)",
			func(p pkg) bool { return p.ImportPath == module+"/router" },
			func(p pkg) []string { return p.Deps },
			func(d string) bool {
				return d == module+"/llm" || strings.HasPrefix(d, "github.com/tmc/langchaingo") || under(d, "nodes") || under(d, "prompts")
			}},
		{"state and config depend on no LLM code (config checks a file against llm/vocab)",
			func(p pkg) bool { return p.ImportPath == module+"/state" || p.ImportPath == module+"/config" },
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return d == module+"/llm" || strings.HasPrefix(d, "github.com/tmc/langchaingo") }},
		{"server uses only the agent's public API (agent and the types it speaks: state, capabilities, logging; runstore for its run records; mcp for the MCP protocol, which pulls in no LLM code; artifactview and its chart to show artifacts; internal/jsonquote to write JSON strings; its own packages) and no graph package: the engine's names it meets come through the agent",
			func(p pkg) bool { return under(p.ImportPath, "server") },
			func(p pkg) []string { return p.Imports },
			func(d string) bool {
				if !strings.HasPrefix(d, module+"/") || under(d, "server") {
					return false
				}
				for _, ok := range []string{"agent", "state", "capabilities", "runstore", "logging", "mcp", "artifactview", "artifactview/chart", "internal/jsonquote"} {
					if d == module+"/"+ok {
						return false
					}
				}
				return true
			}},
		{"server's internal packages import no package of server but the shared ones (apierror, jsonreply, reqbody, sse, run, runs, crew, turns, msgtext, answertext, chatanswer, approvaltoken, transcripts, chatturn): a protocol package (agui, artifacts, mcphttp, native, openai, responses) imports no other protocol package, and none imports server",
			func(p pkg) bool { return under(p.ImportPath, "server/internal") },
			func(p pkg) []string { return p.Imports },
			func(d string) bool {
				if !under(d, "server") {
					return false
				}
				for _, shared := range []string{"apierror", "jsonreply", "reqbody", "sse", "run", "runs", "crew", "turns", "msgtext", "answertext", "chatanswer", "approvaltoken", "transcripts", "chatturn"} {
					if d == module+"/server/internal/"+shared {
						return false
					}
				}
				return true
			}},
		{"the run manager (server/internal/runs, its lifecycle run, its goroutines' crew) depends on no protocol package and not on server",
			func(p pkg) bool {
				return p.ImportPath == module+"/server/internal/runs" || p.ImportPath == module+"/server/internal/run" || p.ImportPath == module+"/server/internal/crew"
			},
			func(p pkg) []string { return p.Deps },
			func(d string) bool {
				if d == module+"/server" {
					return true
				}
				for _, proto := range []string{"agui", "artifacts", "mcphttp", "native", "openai", "responses"} {
					if d == module+"/server/internal/"+proto {
						return true
					}
				}
				return false
			}},
		// Tests may drive our server with langchaingo as a real client.
		{"only llm's code imports langchaingo",
			func(p pkg) bool { return p.ImportPath != module+"/llm" },
			func(p pkg) []string { return p.Imports },
			func(d string) bool { return strings.HasPrefix(d, "github.com/tmc/langchaingo") }},
		// Tests may drive our /mcp endpoint with the SDK's client.
		{"only mcp's code imports the MCP Go SDK",
			func(p pkg) bool { return p.ImportPath != module+"/mcp" },
			func(p pkg) []string { return p.Imports },
			func(d string) bool { return strings.HasPrefix(d, "github.com/modelcontextprotocol/go-sdk") }},
		{"artifactview imports only the standard library and capabilities (the terminal and chat answers use it)",
			func(p pkg) bool { return p.ImportPath == module+"/artifactview" },
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return !isStd(d) && d != module+"/capabilities" }},
		// gonum's plot embeds its fonts (about 8 MB): only the server,
		// which draws artifacts for chat answers, links it in.
		{"only artifactview/chart's code imports gonum.org/v1/plot",
			func(p pkg) bool { return p.ImportPath != module+"/artifactview/chart" },
			func(p pkg) []string { return p.Imports },
			func(d string) bool { return strings.HasPrefix(d, "gonum.org/v1/plot") }},
		{"only server (and programs) depend on artifactview/chart",
			func(p pkg) bool {
				return !program(p.ImportPath) && !under(p.ImportPath, "server") && !under(p.ImportPath, "artifactview/chart") &&
					!under(p.ImportPath, "wiring") && !under(p.ImportPath, "cli") && !under(p.ImportPath, "internal")
			},
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return d == module+"/artifactview/chart" }},
		{"only logging/logrusadapter's code imports logrus",
			func(p pkg) bool { return p.ImportPath != module+"/logging/logrusadapter" },
			func(p pkg) []string { return p.Imports },
			func(d string) bool { return strings.HasPrefix(d, "github.com/sirupsen/logrus") }},
		// Telemetry: the agent emits events, the telemetry packages turn them
		// into spans, metrics and log lines; nothing else links a telemetry
		// library in. Tests may use the SDK's in-memory exporter.
		{"only telemetry/tracing's and telemetry/otlp's code imports OpenTelemetry",
			func(p pkg) bool {
				return p.ImportPath != module+"/telemetry/tracing" && p.ImportPath != module+"/telemetry/otlp"
			},
			func(p pkg) []string { return p.Imports },
			func(d string) bool { return strings.HasPrefix(d, "go.opentelemetry.io/") }},
		{"only telemetry/metrics' code imports the Prometheus client",
			func(p pkg) bool { return p.ImportPath != module+"/telemetry/metrics" },
			func(p pkg) []string { return p.Imports },
			func(d string) bool { return strings.HasPrefix(d, "github.com/prometheus/") }},
		{"the library but telemetry and the command wiring depends on no telemetry library (OpenTelemetry, Prometheus, gRPC)",
			func(p pkg) bool {
				return !program(p.ImportPath) && !under(p.ImportPath, "telemetry") && !under(p.ImportPath, "wiring") &&
					!under(p.ImportPath, "cli") && !under(p.ImportPath, "internal")
			},
			func(p pkg) []string { return p.Deps },
			func(d string) bool {
				return strings.HasPrefix(d, "go.opentelemetry.io/") || strings.HasPrefix(d, "github.com/prometheus/") || strings.HasPrefix(d, "google.golang.org/grpc")
			}},
		{"the telemetry root package (Join, Logs) depends on no telemetry library",
			func(p pkg) bool { return p.ImportPath == module+"/telemetry" },
			func(p pkg) []string { return p.Deps },
			func(d string) bool {
				return strings.HasPrefix(d, "go.opentelemetry.io/") || strings.HasPrefix(d, "github.com/prometheus/") || strings.HasPrefix(d, "google.golang.org/grpc")
			}},
		{"only telemetry/otlp brings in gRPC among the telemetry packages (tracing needs only the API)",
			func(p pkg) bool { return under(p.ImportPath, "telemetry") && !under(p.ImportPath, "telemetry/otlp") },
			func(p pkg) []string { return p.Deps },
			func(d string) bool { return strings.HasPrefix(d, "google.golang.org/grpc") }},
		{"no library package, nor its tests, imports examples/ or the demo application",
			func(p pkg) bool { return !program(p.ImportPath) },
			pkg.allImports,
			func(d string) bool { return under(d, "examples") || under(d, "demo") }},
		{"only the terminal's programs import cli (the wiring is in package wiring)",
			func(p pkg) bool { return !program(p.ImportPath) && !under(p.ImportPath, "cli") },
			pkg.allImports,
			func(d string) bool { return d == module+"/cli" }},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			n := 0
			for _, p := range pkgs {
				if !r.pkgs(p) {
					continue
				}
				n++
				for _, d := range r.of(p) {
					if r.bad(d) {
						t.Errorf("%s imports or depends on %s", strings.TrimPrefix(p.ImportPath, module+"/"), d)
					}
				}
			}
			if n == 0 {
				t.Fatal("the rule applies to no package")
			}
		})
	}
	// The rules must be able to fail: the packages they watch have the
	// dependencies the rules look at.
	if !slices.Contains(get("llm").Imports, "github.com/tmc/langchaingo/llms") {
		t.Error("llm imports no langchaingo: the langchaingo rule would pass vacuously")
	}
	if !slices.Contains(get("telemetry/otlp").Deps, "google.golang.org/grpc") || !slices.Contains(get("wiring").Deps, module+"/telemetry/otlp") {
		t.Error("telemetry/otlp does not bring gRPC or wiring does not use it: the telemetry rules' premise changed")
	}
	if !slices.Contains(get("server").Imports, module+"/server/internal/artifacts") || !slices.Contains(get("server/internal/artifacts").Imports, module+"/server/internal/jsonreply") {
		t.Error("server does not use its artifacts package, or that package no shared one: the internal packages' rule's premise changed")
	}
	if !slices.Contains(get("server/internal/agui").Imports, module+"/server/internal/turns") {
		t.Error("the AG-UI package does not reach the server through turns: the internal packages' rule's premise changed")
	}
	if !slices.Contains(get("server/internal/mcphttp").Imports, module+"/server/internal/turns") || !slices.Contains(get("server/internal/openai").Imports, module+"/server/internal/chatturn") ||
		!slices.Contains(get("server/internal/responses").Imports, module+"/server/internal/chatturn") {
		t.Error("the MCP package does not reach the server through turns, or Chat Completions' or Responses' not through chatturn: the internal packages' rule's premise changed")
	}
	if !slices.Contains(get("server/internal/runs").Imports, module+"/server/internal/run") || !slices.Contains(get("server").Imports, module+"/server/internal/runs") {
		t.Error("server does not use its run manager, or the manager not its lifecycle: the run manager's rule's premise changed")
	}
	if !slices.Contains(get("agent").Deps, module+"/llm") {
		t.Error("agent does not depend on llm: the server rule's premise changed")
	}
}
