// Command capgraph is the capgraph agent with its default demo application
// (package demo/controlroom): a simulated accelerator (about 250 process variables with an
// archive) operated through channel_finding, channel_read, archiver_retrieval
// and channel_write. It runs offline with nothing configured.
//
//	capgraph serve                        # web page + OpenAI-compatible API
//	capgraph run "What is the beam current?"
//	capgraph chat
//
// An application with its own capabilities gets the same commands from
// package cli; see cli.App.
package main

import (
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/demo/controlroom"
)

func main() { cli.Main(controlroom.App()) }
