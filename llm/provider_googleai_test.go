package llm_test

import (
	"errors"
	"testing"

	"github.com/capgraph/capgraph/llm"
)

// The googleai provider is opt-in (build tag capgraph_googleai) because it
// more than doubles a cold build; without the tag its configuration must fail
// with a clear, typed error, and with the tag it must build.
func TestGoogleAIProviderBuildTag(t *testing.T) {
	_, err := llm.New(llm.Config{
		Roles:     map[llm.Role]llm.RoleConfig{llm.RoleDefault: {Provider: "googleai", Model: "gemini-2.0-flash", APIKeyEnv: "GOOGLE_API_KEY"}},
		LookupEnv: func(string) (string, bool) { return "test-key", true },
	})
	if llm.GoogleAICompiled {
		if err != nil {
			t.Fatalf("googleai compiled in, New: %v", err)
		}
		return
	}
	if !errors.Is(err, llm.ErrProviderNotCompiled) || !errors.Is(err, llm.ErrConfig) {
		t.Fatalf("googleai without the build tag: got %v, want ErrProviderNotCompiled and ErrConfig", err)
	}
}
