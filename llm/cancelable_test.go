package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

// Every model New builds says it is Cancelable, and keeps its word: a call
// whose provider accepted the request and never answers — before its reply
// or in the middle of a stream — returns once its context ends, so a node
// may call it in place (see nodes.askAbandonable).
func TestProviderModelsReturnWhenTheirContextEnds(t *testing.T) {
	for _, tc := range []struct {
		provider string
		path     string // the BaseURL's path
		stream   bool
	}{
		{llm.ProviderOpenAI, "/v1", false},
		{llm.ProviderOpenAI, "/v1", true},
		{llm.ProviderAnthropic, "/v1", false},
		{llm.ProviderAnthropic, "/v1", true},
		{llm.ProviderOllama, "", false},
		{llm.ProviderOllama, "", true},
	} {
		name := tc.provider + map[bool]string{true: "/stream", false: "/reply"}[tc.stream]
		t.Run(name, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if tc.stream && tc.provider == llm.ProviderOpenAI {
					// The stream has begun: headers and a first chunk.
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The beam \"}}]}\n\n")
					w.(http.Flusher).Flush()
				}
				arrived <- struct{}{}
				<-release // a provider that never answers, whatever the client does
			}))
			defer srv.Close()
			defer close(release)
			set, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: tc.provider, Model: "m", BaseURL: srv.URL + tc.path}},
				LookupEnv: func(string) (string, bool) { return "test-key", true }})
			if err != nil {
				t.Fatal(err)
			}
			m, _ := set.For(llm.RoleResponse)
			if !llm.IsCancelable(m) {
				t.Fatalf("%T is not Cancelable", m)
			}
			ctx, cancel := context.WithCancel(context.Background())
			req := llm.Request{Role: llm.RoleResponse, Messages: []llm.Message{{Role: "user", Content: "beam current?"}}}
			if tc.stream {
				req.OnChunk = func(context.Context, string) error { return nil }
			}
			done := make(chan error, 1)
			go func() {
				_, err := m.Generate(ctx, req)
				done <- err
			}()
			<-arrived
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, llm.ErrCanceled) {
					t.Errorf("err = %v, want one matching llm.ErrCanceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not return after its context ended")
			}
		})
	}
}

// ignoresContext is an application's model that says nothing.
type ignoresContext struct{}

func (ignoresContext) Generate(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, nil
}

// notCancelable says it is not.
type notCancelable struct{ ignoresContext }

func (notCancelable) Cancelable() bool { return false }

// A wrapper is Cancelable exactly when what it wraps is: llm's own
// wrappers never make a model that ignores its context look as if it
// returned in time.
func TestWrappersAreCancelableAsTheirModel(t *testing.T) {
	scripted, _ := llmtest.New().For(llm.RoleResponse)
	for _, tc := range []struct {
		name  string
		inner llm.Model
		want  bool
	}{
		{"llmtest", scripted, true},
		{"an application's model", ignoresContext{}, false},
		{"a model that says it is not", notCancelable{}, false},
	} {
		wrapped := map[string]llm.Model{
			"itself":               tc.inner,
			"Watch":                llm.Watch(tc.inner, time.Second),
			"WithOfflineFallback":  first(llm.WithOfflineFallback(one{tc.inner})),
			"WatchModels, offline": first(llm.WatchModels(llm.WithOfflineFallback(one{tc.inner}), time.Second)),
		}
		for how, m := range wrapped {
			if got := llm.IsCancelable(m); got != tc.want {
				t.Errorf("%s, %s: IsCancelable = %t, want %t", tc.name, how, got, tc.want)
			}
		}
	}
}

// one is Models of one model for every role.
type one struct{ m llm.Model }

func (o one) For(llm.Role) (llm.Model, bool) { return o.m, true }

func first(ms llm.Models) llm.Model {
	m, _ := ms.For(llm.RoleResponse)
	return m
}
