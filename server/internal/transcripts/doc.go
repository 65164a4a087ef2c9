// Package transcripts names a chat conversation by its messages: a chat
// request without a chat id sends only its history, so a digest of it
// (Digest, over each message's Canonical text, scoped to its owner) finds
// the thread it continues, from the Index of this process or the digest
// the server keeps in the thread's metadata (docs/frontends.md, "Which
// thread?").
package transcripts
