// Package errornode is the agent's error node: the one place a turn ends when
// recovery is exhausted or impossible. It writes the turn's single assistant
// message (kind error_report): a structured report built from the state, then
// a short explanation by the error model role (falling back to the default
// role), or a deterministic explanation when no model is configured or the
// model fails. If building the report itself fails, it still writes a minimal
// "error while handling an error" message naming the original failure.
//
// The node never returns an error and never routes anywhere: it is terminal.
package errornode
