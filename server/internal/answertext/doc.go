// Package answertext is what every protocol shares of an answer's text
// as the agent streams it: the tokens first, then the whole message,
// which adds only what the tokens did not carry (Unstreamed).
package answertext
