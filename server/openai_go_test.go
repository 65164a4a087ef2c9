package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

func openaiGoClient(env *testEnv, key string) *oa.Client {
	c := oa.NewClient(option.WithBaseURL(env.http.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return &c
}

func TestOpenAIGoModels(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Models = []Model{{ID: "capgraph"}, {ID: "capgraph-plan"}} })
	c := openaiGoClient(env, keyAlice)
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "capgraph,capgraph-plan" {
		t.Fatalf("models = %v", ids)
	}
	m, err := c.Models.Get(context.Background(), "capgraph-plan")
	if err != nil || m.ID != "capgraph-plan" || m.Object != "model" {
		t.Fatalf("get = %+v, %v", m, err)
	}
	_, err = c.Models.Get(context.Background(), "nope")
	var apiErr *oa.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
}

func TestOpenAIGoNonStream(t *testing.T) {
	env := newTestEnv(t, nil)
	c := openaiGoClient(env, keyAlice)
	resp, err := c.Chat.Completions.New(context.Background(), oa.ChatCompletionNewParams{
		Model:       "capgraph",
		Messages:    []oa.ChatCompletionMessageParamUnion{oa.SystemMessage("be brief"), oa.UserMessage("What is the beam current?")},
		Temperature: oa.Float(0.2),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != "Beam current is 500 mA." || resp.Choices[0].FinishReason != "stop" {
		t.Fatalf("response = %+v", resp.Choices)
	}
	if resp.Usage.TotalTokens != 14 {
		t.Fatalf("usage = %+v", resp.Usage)
	}
	rc := resp.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw()
	if !strings.Contains(rc, "channel_read") || !strings.Contains(rc, "Plan:") {
		t.Fatalf("reasoning_content = %s", rc)
	}
}

func TestOpenAIGoStreamAccumulator(t *testing.T) {
	// Status frames forced on: openai-go delivers them as chunks without
	// choices and still accumulates the answer (auto would not send them).
	env := newTestEnv(t, func(c *Config) { c.StatusFrames = StatusFramesOn })
	c := openaiGoClient(env, keyAlice)
	s := c.Chat.Completions.NewStreaming(context.Background(), oa.ChatCompletionNewParams{
		Model:         "capgraph",
		Messages:      []oa.ChatCompletionMessageParamUnion{oa.UserMessage("What is the beam current?")},
		StreamOptions: oa.ChatCompletionStreamOptionsParam{IncludeUsage: oa.Bool(true)},
	})
	acc := oa.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	statusFrames := 0
	for s.Next() {
		ch := s.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) == 0 {
			if ch.JSON.ExtraFields["event"].Raw() != "" {
				statusFrames++
			}
			continue
		}
		if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok && f.Raw() != "" {
			var txt string
			if err := json.Unmarshal([]byte(f.Raw()), &txt); err != nil {
				t.Fatal(err)
			}
			reasoning.WriteString(txt)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "Beam current is 500 mA." {
		t.Fatalf("content = %q", got)
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens != 14 {
		t.Fatalf("finish %q usage %+v", acc.Choices[0].FinishReason, acc.Usage)
	}
	if !strings.Contains(reasoning.String(), "channel_read") || !strings.Contains(reasoning.String(), "retrying") {
		t.Fatalf("reasoning = %q", reasoning.String())
	}
	if statusFrames == 0 {
		t.Fatal("no Open WebUI status frames")
	}
}

func TestOpenAIGoErrors(t *testing.T) {
	env := newTestEnv(t, nil)
	ctx := context.Background()
	msgs := []oa.ChatCompletionMessageParamUnion{oa.UserMessage("hi")}
	tests := []struct {
		name   string
		key    string
		model  string
		status int
		code   string
	}{
		{"wrong key", "sk-wrong", "capgraph", 401, "invalid_api_key"},
		{"unknown model", keyAlice, "nope", 404, "model_not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openaiGoClient(env, tc.key).Chat.Completions.New(ctx, oa.ChatCompletionNewParams{Model: tc.model, Messages: msgs})
			var apiErr *oa.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Code != tc.code || apiErr.Message == "" {
				t.Fatalf("got %d %q %q", apiErr.StatusCode, apiErr.Code, apiErr.Message)
			}
		})
	}
	t.Run("mid-stream failure", func(t *testing.T) {
		s := openaiGoClient(env, keyAlice).Chat.Completions.NewStreaming(ctx, oa.ChatCompletionNewParams{Model: "capgraph",
			Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("please fail")}})
		for s.Next() {
		}
		if s.Err() == nil || !strings.Contains(s.Err().Error(), "checkpoint store is unreachable") {
			t.Fatalf("err = %v", s.Err())
		}
	})
	t.Run("failure before streaming", func(t *testing.T) {
		_, err := openaiGoClient(env, keyAlice).Chat.Completions.New(ctx, oa.ChatCompletionNewParams{Model: "capgraph",
			Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("please fail")}})
		var apiErr *oa.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Response.Header.Get("x-should-retry") != "false" {
			t.Fatalf("err = %v", err)
		}
	})
}
