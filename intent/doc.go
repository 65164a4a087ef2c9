// Package intent decides from the user's own words whether a turn asks for
// a change, and which: the rules (FromMessages; FromAnswer for an answer to
// the assistant's clarifying question) read the user's messages in
// English, German and French — reported words, nouns, history, questions,
// hypotheticals and negations are never changes — and a model's reading
// is only compared with what they found (Decide). Permits then holds every
// side-effecting action to that intent: its targets must be the ones the
// user named and its values the ones the user stated, or worked out from a
// reading for a relative change ("raise Q1 by 5 A"; Derivation shows how).
// Units and numbers (ParseQuantity, "105,5 A", "0,105 kA") and the
// matching of a target against what the user named live here too.
//
// The package sits low in the layers: it imports capabilities (Action,
// Change, Reading), typo and the standard library, and state imports it
// for the Intent a task carries. It cannot import state, so it knows
// messages as strings, not the conversation's type; nodes passes them.
// docs/safety.md, "Intent before action", lists the rules with their tests.
package intent
