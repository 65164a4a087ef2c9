// Package state is the agent's serialisable state: the conversation, the
// context store, and the current turn (task, selected capabilities, plan,
// step results, recovery counters, pending approval). One checkpoint holds one
// State, and it is the whole truth: a run resumed from it routes exactly as the
// original would have.
//
// Nodes never mutate a State; they return an Update, which Apply merges. Turn
// rules: messages and context persist across turns, the Turn is reset.
package state
