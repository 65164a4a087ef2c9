// Package artifacts is the server's artifact protocol: the routes that
// list and serve a thread's artifacts to its owner and its pictures at
// signed URLs (Routes, over what the server gives it: its threads, the
// agent's state, its error shape), the Markdown and MCP content a chat
// answer ends with, and their rules — the signing key and the signature
// of a picture's URL (the signature is the permission to fetch it), which
// turn an artifact id names, which picture an artifact has and under
// which suffix, and a cache of drawn pictures.
package artifacts
