// Package sse writes Server-Sent Events streams, the answer of every
// streaming route of the server (Chat Completions and Responses streams,
// AG-UI, native run events): one frame at a time, each flushed (or a
// batch held and flushed together) under a write deadline, so a client
// that stops reading cannot hold its handler.
package sse
