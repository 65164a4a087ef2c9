// Package jsonquote writes a Go string as a JSON string, byte for byte as
// encoding/json does, into a caller's buffer: for the hand-written
// encoders on a turn's hot path (the state's checkpoints, the Chat
// Completions stream's chunks), which would otherwise go through
// reflection for every value.
package jsonquote
