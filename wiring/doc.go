// Package wiring turns a configuration file (package config) into a running
// capgraph: the models of its roles (llm), its checkpoint store (memory,
// SQLite, PostgreSQL), the agent over the application's capabilities, and
// the HTTP server's configuration. It sits between the front ends (the
// terminal, package cli; a server-only deployment; any other program) and
// the agent, so none of them converts the file itself, and none needs the
// terminal package to load capgraph.yaml.
//
// The conversions (AgentConfig, Models, LLMConfig, ServerConfig,
// ParseStore) map every key onto the setting of the package that owns it.
// A key the file leaves out stays zero, so that package's documented
// default applies: one source for each default. The one exception is
// checkpoints.durability, whose default for an application
// (DefaultDurability, async) is not the engine's (sync). Runtime builds
// the parts once, when first asked for, over an App (a name and its
// capabilities): the application's name chooses its default store
// (DefaultStorePath) and is recorded with every thread its agent runs
// (agent.Config.Application).
// Capabilities come from capability sources, the application's own first;
// a section of the file that adds capabilities adds a source.
package wiring
