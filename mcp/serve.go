package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Asker is the agent as the MCP server's tools reach it. The HTTP server
// implements it (server/internal/mcphttp): every call runs as the authenticated
// caller of the request, in that caller's threads.
type Asker interface {
	// Ask runs a turn on a thread (a new one when Question.Thread is
	// empty) and waits for its end. On a thread waiting for an approval,
	// the question is the answer to it.
	Ask(ctx context.Context, q Question) (Answer, error)
	// Threads lists the caller's threads, newest first.
	Threads(ctx context.Context) ([]ThreadSummary, error)
}

// Question is one call of the ask tool.
type Question struct {
	Thread string
	Text   string
	// RequestID is the client's key of the call ("" none): a call
	// repeated with the same one (after a timeout, a lost connection)
	// gets the first call's answer instead of asking again.
	RequestID string
	// Progress, when the client asked for progress, reports what the turn
	// is doing ("Step 2/3 channel_read"); nil otherwise.
	Progress func(message string)
}

// Answer is how the turn ended.
type Answer struct {
	Thread string
	// Text is the assistant's message: the answer, clarifying questions,
	// the approval question or an error report.
	Text string
	// Status is the run's status ("completed", "interrupted", …).
	Status string
	// Approval is the approval the thread now waits for, if any.
	Approval *PendingApproval
	// Images are the turn's pictures (its time series plotted, its image
	// figures), sent as image content after the text.
	Images []Media
	// Replayed: the answer is the first call's with the same request_id.
	Replayed bool
}

// PendingApproval is what a human must approve before the turn goes on.
type PendingApproval struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

// ThreadSummary is one thread of the caller.
type ThreadSummary struct {
	ID      string    `json:"thread_id"`
	Status  string    `json:"status,omitempty"`
	Updated time.Time `json:"updated_at"`
}

// ErrBadQuestion is the kind of an Ask error caused by the question itself
// (empty, too long, a bad thread id): the MCP client gets it as a tool
// error to correct, not a server failure.
var ErrBadQuestion = errors.New("bad question")

// HandlerConfig configures NewHandler.
type HandlerConfig struct {
	// Name is the agent's name in the MCP handshake (default "capgraph").
	Name string
	// Examples are questions the agent answers well, shown in the ask
	// tool's description.
	Examples []string
	// AnswersApprovals: a pending approval is answered by the next ask on
	// its thread. Otherwise a person answers it elsewhere (Answer.Text says
	// where), and the tools say so.
	AnswersApprovals bool
}

// The tools of the MCP server.
const (
	ToolAsk         = "ask"
	ToolListThreads = "list_threads"
)

// AskInput is the ask tool's arguments.
type AskInput struct {
	Question  string `json:"question" jsonschema:"the question or request, in plain language; on a thread waiting for approval, the answer (yes or no)"`
	ThreadID  string `json:"thread_id,omitempty" jsonschema:"the thread to continue (from an earlier answer); leave it out to start a new conversation"`
	RequestID string `json:"request_id,omitempty" jsonschema:"optional: a new unique id for this call (a UUID); if the call times out or its connection drops, call again with the same request_id, question and thread_id to get the first call's answer instead of asking (and acting) twice"`
}

// AskOutput is the ask tool's structured result.
type AskOutput struct {
	ThreadID string           `json:"thread_id"`
	Status   string           `json:"status"`
	Answer   string           `json:"answer"`
	Approval *PendingApproval `json:"approval,omitempty"`
	// Replayed: this is the answer of an earlier call with the same
	// request_id; nothing was asked or done again.
	Replayed bool `json:"replayed,omitempty"`
}

// ThreadsOutput is the list_threads tool's structured result.
type ThreadsOutput struct {
	Threads []ThreadSummary `json:"threads"`
}

// NewHandler returns the streamable HTTP handler of an MCP server with two
// tools: ask (a question in a thread; an approval the turn stops for is
// part of the result, and the next ask on that thread answers it) and
// list_threads. It is stateless — every request stands alone, so the
// caller is whoever authenticated that request, and any replica can serve
// it — and has no authentication of its own: mount it behind the server's.
func NewHandler(a Asker, cfg HandlerConfig) http.Handler {
	name := cfg.Name
	if name == "" {
		name = "capgraph"
	}
	approvals := "When an answer asks for an approval, show it to the user: they approve or reject it themselves, on the " + name + " page or through its API; it cannot be answered through this tool."
	howToAnswer := "If the agent needs a human's approval before it acts, the result says so, what it would do and where the user answers it; " +
		"show it to the user. It is not answered through this tool."
	if cfg.AnswersApprovals {
		approvals = "When an answer asks for an approval, show it to the user and call ask again on that thread with their answer (yes or no)."
		howToAnswer = "If the agent needs a human's approval before it acts, the result says so and what it would do; " +
			"call ask again with that thread_id and the user's answer (yes to proceed, no to cancel) as the question. Never answer an approval yourself."
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: version()}, &sdk.ServerOptions{
		Instructions: "Use the ask tool to ask the " + name + " agent a question in plain language. " +
			"Keep its thread_id to ask follow-up questions in the same conversation. " + approvals,
		Capabilities: &sdk.ServerCapabilities{},
	})
	desc := "Ask the " + name + " agent a question or give it a request, in plain language, and get its answer. " +
		"The answer includes a thread_id: pass it again to continue the conversation (follow-ups reuse what earlier turns found). " +
		howToAnswer
	if len(cfg.Examples) > 0 {
		desc += " Example questions: " + strings.Join(quote(cfg.Examples), ", ") + "."
	}
	openWorld, closedWorld := true, false
	sdk.AddTool(srv, &sdk.Tool{Name: ToolAsk, Title: "Ask the agent", Description: desc,
		Annotations: &sdk.ToolAnnotations{Title: "Ask the agent", OpenWorldHint: &openWorld}},
		func(ctx context.Context, req *sdk.CallToolRequest, in AskInput) (*sdk.CallToolResult, AskOutput, error) {
			ans, err := a.Ask(ctx, Question{Thread: in.ThreadID, Text: in.Question, RequestID: in.RequestID, Progress: progress(ctx, req)})
			if err != nil {
				return nil, AskOutput{}, err
			}
			out := AskOutput{ThreadID: ans.Thread, Status: ans.Status, Answer: ans.Text, Approval: ans.Approval, Replayed: ans.Replayed}
			text := ans.Text
			if ans.Approval != nil {
				how := fmt.Sprintf("The user approves or rejects it on the %s page (the conversation %s in its thread list) or with the API (POST /api/threads/%s/approval); it is not answered through this tool.",
					name, ans.Thread, ans.Thread)
				if cfg.AnswersApprovals {
					how = fmt.Sprintf("To answer, call ask with thread_id %q and the question \"yes\" to proceed or \"no\" to cancel.", ans.Thread)
				}
				text = strings.TrimSpace(text + "\n\nAPPROVAL NEEDED: " + ans.Approval.Summary + "\n" + how)
			}
			content := []sdk.Content{&sdk.TextContent{Text: text}}
			for _, img := range ans.Images {
				content = append(content, &sdk.ImageContent{MIMEType: img.MediaType, Data: img.Data})
			}
			return &sdk.CallToolResult{Content: content}, out, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: ToolListThreads, Title: "List conversations", Description: "List your conversation threads with the " + name + " agent, newest first.",
		Annotations: &sdk.ToolAnnotations{Title: "List conversations", ReadOnlyHint: true, OpenWorldHint: &closedWorld}},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, ThreadsOutput, error) {
			ths, err := a.Threads(ctx)
			if err != nil {
				return nil, ThreadsOutput{}, err
			}
			if ths == nil {
				ths = []ThreadSummary{}
			}
			return nil, ThreadsOutput{Threads: ths}, nil
		})
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
}

// progress sends progress notifications to a client that asked for them
// (a progress token in the call): what the turn is doing, while it runs.
func progress(ctx context.Context, req *sdk.CallToolRequest) func(string) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return nil
	}
	n := 0
	return func(msg string) {
		n++
		_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(n)})
	}
}

func quote(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
