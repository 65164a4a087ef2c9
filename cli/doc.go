// Package cli is capgraph's terminal face: the commands of the capgraph
// program, available to any application with its own capabilities from a
// few lines of main.go:
//
//	func main() {
//		cli.Main(cli.App{
//			Name: "myagent",
//			Capabilities: func(cfg *config.Config) ([]capabilities.Capability, error) {
//				return mycaps.All(cfg)
//			},
//		})
//	}
//
// Commands:
//
//	run "question"      one turn; a live status line on a terminal, plain event lines otherwise
//	chat                a conversation kept in the store; --thread resumes one; slash commands
//	serve               the HTTP server (web page, OpenAI-compatible API, native API)
//	graph               the agent graph as Mermaid or DOT; --thread: a thread's last plan
//	capabilities        the registry: provides, requires, retry policy, approval
//	config check [FILE] validate a configuration file, each problem with its line
//	eval CASES.yaml     score the agent against a case file (package eval); --compare CONFIG
//	                    runs it under a second configuration; exit 0 pass, 1 fail, 2 error
//
// Global flags: --config FILE (default capgraph.yaml in the working directory
// when it exists) and --store memory | sqlite:PATH | postgres://… (default:
// SQLite in the application's own data directory, see
// wiring.DefaultStorePath).
//
// With nothing configured everything works: no models means offline mode,
// the store is the default SQLite file.
//
// serve and chat say what they run with (the configuration file, the store,
// the models, the write switch). Hints name the program the way the user
// ran it (Env.Program, from Invocation: "capgraph", or "go run
// ./cmd/capgraph" under go run). On a terminal a turn shows one status line
// cut to the terminal's width; elsewhere one plain line per event.
//
// The translation from the configuration file to the models, the store, the
// agent and the server lives in package wiring, which a front end without
// a terminal (a server-only deployment) uses as well. App.Run takes its arguments, streams and
// environment as an Env and returns the exit status, so every command is
// tested without a terminal. Exit statuses: 0 for an answer, clarifying
// questions, an approval request or an error report; 1 for a FATAL failure
// or a problem such as a bad configuration (one line on stderr); 2 for bad
// usage. eval has its own for CI: 0 when every threshold holds, 1 when an
// expectation failed below one, 2 when the evaluation could not be carried
// out.
package cli
