// Package chatturn is a chat request as Chat Completions and Responses
// both read it (Turn): the model profile, the new message, the
// conversation before it, and where it goes on.
package chatturn
