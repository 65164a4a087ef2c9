package llm_test

import (
	"fmt"
	"time"

	"github.com/capgraph/capgraph/llm"
)

func ExampleError_Classification() {
	err := &llm.Error{Kind: llm.ErrRateLimited, Role: llm.RoleClassifier, Provider: "openai", StatusCode: 429, Delay: 7 * time.Second}
	c := err.Classification()
	fmt.Println(c.Severity, c.Kind, c.RetryAfter)

	err = &llm.Error{Kind: llm.ErrAuth, Role: llm.RoleClassifier, Provider: "openai", StatusCode: 401, APIKeyEnv: "OPENAI_API_KEY"}
	c = err.Classification()
	fmt.Println(c.Severity, "-", c.UserMessage)
	// Output:
	// retriable rate_limit 7s
	// critical - the API key for role classifier was rejected
}

func ExampleNew() {
	// No roles: every node runs its offline strategy.
	m, _ := llm.New(llm.Config{})
	_, ok := m.For(llm.RoleOrchestrator)
	fmt.Println(ok)

	// One default role for every node, a local OpenAI-compatible server (no key needed).
	m, err := llm.New(llm.Config{Roles: map[llm.Role]llm.RoleConfig{
		llm.RoleDefault: {Provider: llm.ProviderOpenAI, Model: "qwen2.5:7b", BaseURL: "http://localhost:11434/v1"},
	}})
	_, ok = m.For(llm.RoleOrchestrator)
	fmt.Println(ok, err)
	// Output:
	// false
	// true <nil>
}
