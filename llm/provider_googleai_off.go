//go:build !capgraph_googleai

package llm

import (
	"errors"

	"github.com/tmc/langchaingo/llms"
)

// GoogleAICompiled reports whether the googleai provider is in this binary
// (build tag capgraph_googleai).
const GoogleAICompiled = false

// newGoogleAI refuses: langchaingo's googleai provider pulls in the Google SDK,
// gRPC and OpenTelemetry, which more than doubles a cold build of the
// capgraph command, so it is opt-in.
func newGoogleAI(string, string) (llms.Model, error) {
	return nil, errors.Join(ErrProviderNotCompiled, errors.New(
		"build with -tags capgraph_googleai, or use provider openai with base_url "+
			"https://generativelanguage.googleapis.com/v1beta/openai/ (Gemini's OpenAI-compatible endpoint)"))
}
