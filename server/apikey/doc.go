// Package apikey holds the one rule every API key of the server meets,
// wherever it comes from (the YAML file's server.api_keys, CAPGRAPH_API_KEYS,
// a Go program's server.Config), and the digest the server keeps instead of
// the key. It imports only the standard library, so the configuration
// loader can use it without importing the server.
package apikey
