// Package msgtext reads a chat message's content as text, the same way
// for every protocol that sends OpenAI-shaped messages (Chat Completions,
// AG-UI): a string, or the text parts of an array of content parts.
package msgtext
