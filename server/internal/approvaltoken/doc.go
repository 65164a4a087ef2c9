// Package approvaltoken is the approval tokens a chat answer (Chat
// Completions, Responses) carries: the client sends the whole history each
// time, so an approval request's answer ends with a short token ("AP-…")
// that the next request carries back to resume the thread. Find reads it,
// AnswerText takes it out of the user's answer, and Store keeps this
// process's tickets, each claimed once and settled with its reply.
package approvaltoken
