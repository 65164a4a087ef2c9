package llmtest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/capgraph/capgraph/llm"
	"github.com/capgraph/capgraph/llm/llmtest"
)

func Example() {
	m := llmtest.New().
		Script(llm.RoleClassifier, llmtest.Text(`{"capabilities": ["channel_read"]}`)).
		Script(llm.RoleResponse, llmtest.Stream("The beam ", "current is 500 mA."))

	classifier, _ := m.For(llm.RoleClassifier)
	r, _ := classifier.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "beam current?"}}})
	fmt.Println(r.Text)

	response, _ := m.For(llm.RoleResponse)
	r, _ = response.Generate(context.Background(), llm.Request{
		OnChunk: func(_ context.Context, chunk string) error { fmt.Printf("chunk %q\n", chunk); return nil },
	})
	fmt.Println(r.Text)
	fmt.Println(m.Count(), "calls")
	// Output:
	// {"capabilities": ["channel_read"]}
	// chunk "The beam "
	// chunk "current is 500 mA."
	// The beam current is 500 mA.
	// 2 calls
}

func ExampleModel_On() {
	m := llmtest.New().On(llmtest.PromptContains("weather"), func(llm.Request) llmtest.Reply {
		return llmtest.Text(`{"is_match": true}`)
	})
	model, _ := m.For(llm.RoleClassifier)
	r, _ := model.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "the weather in Paris"}}})
	fmt.Println(r.Text)
	_, err := model.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "trains"}}})
	fmt.Println(errors.Is(err, llmtest.ErrExhausted))
	// Output:
	// {"is_match": true}
	// true
}

func ExampleFail() {
	m := llmtest.New().Script(llm.RoleOrchestrator,
		llmtest.Fail(&llm.Error{Kind: llm.ErrRateLimited, Role: llm.RoleOrchestrator, StatusCode: 429}))
	model, _ := m.For(llm.RoleOrchestrator)
	_, err := model.Generate(context.Background(), llm.Request{})
	fmt.Println(errors.Is(err, llm.ErrRateLimited))
	// Output: true
}
