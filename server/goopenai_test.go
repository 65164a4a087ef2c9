package server

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"
	"github.com/tmc/langchaingo/llms"
	lcopenai "github.com/tmc/langchaingo/llms/openai"
)

func goOpenAIClient(env *testEnv, key string) *goopenai.Client {
	cfg := goopenai.DefaultConfig(key)
	cfg.BaseURL = env.http.URL + "/v1"
	return goopenai.NewClientWithConfig(cfg)
}

func TestGoOpenAIStreamToEOF(t *testing.T) {
	env := newTestEnv(t, nil)
	st, err := goOpenAIClient(env, keyAlice).CreateChatCompletionStream(context.Background(), goopenai.ChatCompletionRequest{
		Model:         "capgraph",
		Messages:      []goopenai.ChatCompletionMessage{{Role: "user", Content: "What is the beam current?"}},
		Stream:        true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
		User:          "someone",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var content, reasoning strings.Builder
	finish := ""
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range resp.Choices {
			content.WriteString(ch.Delta.Content)
			reasoning.WriteString(ch.Delta.ReasoningContent)
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
	}
	if content.String() != "Beam current is 500 mA." || finish != "stop" {
		t.Fatalf("content %q finish %q", content.String(), finish)
	}
	if !strings.Contains(reasoning.String(), "✔ 1/2 channel_read") {
		t.Fatalf("reasoning %q", reasoning.String())
	}
}

func TestGoOpenAIAPIErrors(t *testing.T) {
	env := newTestEnv(t, nil)
	tests := []struct {
		name   string
		key    string
		model  string
		status int
		code   string
	}{
		{"no key", "", "capgraph", 401, "invalid_api_key"},
		{"unknown model", keyAlice, "gpt-4o", 404, "model_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := goOpenAIClient(env, tc.key).CreateChatCompletion(context.Background(), goopenai.ChatCompletionRequest{
				Model: tc.model, Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
			var apiErr *goopenai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tc.status || apiErr.Code != tc.code {
				t.Fatalf("err = %#v", err)
			}
		})
	}
	t.Run("mid-stream", func(t *testing.T) {
		st, err := goOpenAIClient(env, keyAlice).CreateChatCompletionStream(context.Background(), goopenai.ChatCompletionRequest{
			Model: "capgraph", Messages: []goopenai.ChatCompletionMessage{{Role: "user", Content: "fail now"}}, Stream: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for {
			_, err = st.Recv()
			if err != nil {
				break
			}
		}
		// A failure of the server: the client learns a reference, not the
		// Go error (which may name addresses or file paths).
		if errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "internal server error (reference ") || strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLangchaingoStreaming(t *testing.T) {
	env := newTestEnv(t, nil)
	llm, err := lcopenai.New(lcopenai.WithBaseURL(env.http.URL+"/v1"), lcopenai.WithToken(keyAlice), lcopenai.WithModel("capgraph"))
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	resp, err := llm.GenerateContent(context.Background(),
		[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "What is the beam current?")},
		llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
			streamed.Write(b)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Content; got != "Beam current is 500 mA." {
		t.Fatalf("content %q", got)
	}
	if streamed.String() != "Beam current is 500 mA." {
		t.Fatalf("streamed %q", streamed.String())
	}
	if resp.Choices[0].StopReason != "stop" || !strings.Contains(resp.Choices[0].ReasoningContent, "Plan:") {
		t.Fatalf("stop %q reasoning %q", resp.Choices[0].StopReason, resp.Choices[0].ReasoningContent)
	}
}
