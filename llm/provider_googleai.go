//go:build capgraph_googleai

package llm

import (
	"context"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"
)

// GoogleAICompiled reports whether the googleai provider is in this binary
// (build tag capgraph_googleai).
const GoogleAICompiled = true

// newGoogleAI builds the Gemini provider. The Google SDK authenticates
// through its own transport; a custom client would drop the API key, so
// errors from this provider are classified from the SDK's error instead (see
// kindOf).
func newGoogleAI(key, model string) (llms.Model, error) {
	return googleai.New(context.Background(), googleai.WithAPIKey(key), googleai.WithDefaultModel(model), googleai.WithRest())
}
