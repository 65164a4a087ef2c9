package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
	"github.com/capgraph/capgraph/mcp"
)

// An MCP tool as a capability: each tool of a connected server becomes one
// (its name prefixed with the server's, its input schema shown to the
// planner and checked before the call, its result one value of its own
// context type), read-only when the server says so. The server here runs
// in the process, as any streamable HTTP MCP server would run beside it.
func ExampleConnect() {
	type SetpointArgs struct {
		Magnet string `json:"magnet" jsonschema:"the magnet's name, e.g. Q1"`
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "magnets", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "get-setpoint", Description: "Read the present setpoint of a magnet in amperes.",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, a SetpointArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Magnet + " setpoint: 92.0 A"}}}, nil, nil
		})
	web := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer web.Close()

	set, err := mcp.Connect(context.Background(), []mcp.ServerConfig{{Name: "magnets", Transport: mcp.TransportHTTP, URL: web.URL}}, mcp.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer set.Close()
	for _, c := range set.Capabilities() {
		fmt.Println(c.Name(), c.Provides(), "-", c.Description())
	}

	plan := `{"steps": [{"context_key": "q1", "capability": "magnets_get_setpoint", "task_objective": "read the setpoint of Q1", "parameters": {"magnet": "Q1"}},
	 {"context_key": "answer", "capability": "respond", "task_objective": "answer"}]}`
	a, err := agent.New(agent.Config{Capabilities: set.Capabilities(),
		Models: llmtest.New().Script(llm.RoleOrchestrator, llmtest.Text(plan)).Only(llm.RoleOrchestrator)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range a.Run(context.Background(), agent.TurnRequest{Thread: "mcp", Input: "What is the setpoint of magnet Q1?"}) {
		switch {
		case err != nil:
			fmt.Println("error:", err)
		case ev.Type == agent.EventMessage:
			fmt.Printf("%s: %s\n", ev.Message.Kind, ev.Message.Content)
		}
	}
	// Output:
	// magnets_get_setpoint [MAGNETS_GET_SETPOINT_RESULT] - Read the present setpoint of a magnet in amperes.
	// answer: (Offline mode: no language model was used; this answer is assembled from the capability results.)
	//
	// Results for: What is the setpoint of magnet Q1?
	//
	// • Q1 setpoint: 92.0 A
}
