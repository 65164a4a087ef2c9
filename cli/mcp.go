package cli

import (
	"fmt"
)

// printMCP lists the MCP servers the command started and their tools'
// capabilities (side effects marked), and the optional ones left out.
func (c *cmdEnv) printMCP(verbose bool) {
	if c.rt == nil || c.rt.MCP() == nil {
		return
	}
	set := c.rt.MCP()
	w := c.env.Stdout
	servers := set.Servers()
	if len(servers) == 0 && len(set.Skipped()) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMCP servers:")
	for _, s := range servers {
		fmt.Fprintf(w, "  %s (%s: %s): %d tools\n", s.Name, s.Transport, s.Target, len(s.Tools))
		for _, t := range s.Tools {
			mark := ""
			if t.SideEffects() {
				mark = " [side effects]"
			}
			fmt.Fprintf(w, "    %s ← %s%s\n", t.Name(), t.ToolName(), mark)
			if verbose {
				fmt.Fprintf(w, "      %s\n", t.Description())
			}
		}
	}
	for _, sk := range set.Skipped() {
		fmt.Fprintf(w, "  %s: not started (optional): %s\n", sk.Server, oneLine(sk.Err))
	}
}
