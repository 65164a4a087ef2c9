package nodes

import (
	"context"

	"github.com/capgraph/capgraph/state"
)

// Node is an infrastructure node. The agent wraps it: the wrapper counts the
// step, classifies a returned error (through the node's ClassifyError when it
// implements capabilities.ErrorClassifier), applies its retry policy (through
// capabilities.RetryPolicyProvider) and clears the node's error on success.
// Run returns what the node itself changes; it must not mutate s. With an
// error, Run still returns in Update.Tokens the tokens of the model calls it
// made (a reply it could not use was paid for); the wrapper adds them to the
// turn's budget and ignores the rest of that Update.
type Node interface {
	Name() string
	Run(ctx context.Context, s state.State) (state.Update, error)
}
