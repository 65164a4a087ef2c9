package effectcrash

import (
	"context"
	"fmt"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP server of the test: the test binary itself, started by the
// child's mcp.Connect as a stdio server (envMCPServer), with two tools
// whose calls act on the journal:
//
//   - append_entry (no annotations: side effects, not idempotent) appends a
//     line for every call;
//   - set_value (idempotentHint) sets a target, which appends a line only
//     when the target holds another value: calling it again with the same
//     arguments changes nothing more.
//
// Both block at the kill points the child's plan names for their target
// (envKills), after saying so in the signal file, which the child relays
// to the parent.

type toolArgs struct {
	Target string  `json:"target" jsonschema:"the magnet, e.g. Q12"`
	Value  float64 `json:"value" jsonschema:"the current in A"`
}

func mcpServerMain() int {
	m := &machine{journal: os.Getenv(envJournal), calls: os.Getenv(envCalls)}
	plan, err := parseKills(os.Getenv(envKills))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h := plan.hooks(func(point, target string) {
		_ = appendSignal(os.Getenv(envSignals), point, target)
	})
	srv := sdk.NewServer(&sdk.Implementation{Name: "journal", Version: "1"}, nil)
	call := func(tool string, dedupe bool) sdk.ToolHandlerFor[toolArgs, any] {
		return func(ctx context.Context, _ *sdk.CallToolRequest, in toolArgs) (*sdk.CallToolResult, any, error) {
			by := mcpServerName + "/" + tool
			if err := appendLine(m.calls, entry{Target: in.Target, Value: in.Value, By: by}); err != nil {
				return nil, nil, err
			}
			h.at(pointBeforeEffect, in.Target)
			if dedupe {
				v, err := m.value(in.Target)
				if err != nil {
					return nil, nil, err
				}
				if v == in.Value {
					return text(fmt.Sprintf("%s already at %g A", in.Target, in.Value)), nil, nil
				}
			}
			if err := appendLine(m.journal, entry{Target: in.Target, Value: in.Value, By: by}); err != nil {
				return nil, nil, err
			}
			h.at(pointAfterEffect, in.Target)
			return text(fmt.Sprintf("%s set to %g A", in.Target, in.Value)), nil, nil
		}
	}
	sdk.AddTool(srv, &sdk.Tool{Name: toolAppend, Description: "Append a setpoint to the magnet journal."}, call(toolAppend, false))
	sdk.AddTool(srv, &sdk.Tool{Name: toolSet, Description: "Set a magnet current.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true}}, call(toolSet, true))
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// appendSignal tells the child (which polls the file) that the MCP server
// stopped at point for target.
func appendSignal(path, point, target string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s %s\n", point, target)
	return err
}
