// Package openai is the OpenAI Chat Completions protocol as the server
// speaks it: its wire format (the request, ChatMessage and its text, the
// completion and chunk shapes and their writers, the status frames Open
// WebUI shows, the model list's objects) and its routes (Routes, built
// from Deps): GET /v1/models, GET /v1/models/{id} and POST
// /v1/chat/completions, which reach the server only through the
// chatturn.Chats it implements (a chat turn opened into a run, or
// answered from a repeat's; the answer's end). Open WebUI's background
// tasks are answered here (tasks.go).
package openai
