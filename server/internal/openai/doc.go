// Package openai is the OpenAI Chat Completions protocol's wire format as
// the server speaks it: the request it reads (ChatRequest, ChatMessage and
// its text), the completion and chunk shapes it answers and their writers
// (WriteCompletion, Chunker, a completion's Ident), the status frames
// Open WebUI shows, and the model list's objects. The route's handler,
// which opens the run, is the server's (server/openai.go).
package openai
