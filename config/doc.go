// Package config reads capgraph's single YAML configuration file
// (capgraph.yaml, or the file given with --config).
//
// It is plain data plus validation: it knows nothing of the agent or the
// server, which convert a *Config into their own configs. Values may use
// ${VAR} and ${VAR:-default} environment expansion. Every problem — an
// unknown key, a wrong type, an impossible value — is reported with the key
// and the line it is on, all at once in a *Error; nothing is silently
// ignored. docs/configuration.md documents every key.
package config
