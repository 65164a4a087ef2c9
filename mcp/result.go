package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Size limits of a stored result: the context store is checkpointed with
// every step, so a tool that returns megabytes keeps what fits and says so.
const (
	maxResultText  = 64 << 10
	maxMediaBytes  = 1 << 20
	maxSummaryText = 2000
)

// ToolResult is what a tool returned, as its capability stores it in the
// context store (the value of its ContextType).
type ToolResult struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Text is the result's text content, joined by blank lines.
	Text string `json:"text,omitempty"`
	// Structured is the tool's structured content, as JSON values.
	Structured any `json:"structured,omitempty"`
	// Images are the images the tool returned, with their media type.
	//
	// Hook for artifacts: they are kept here, in the context store, and
	// only mentioned in the summary. Rendering them (the web page, /v1
	// answers, the terminal) is the artifact work, which reads them from
	// here; nothing else needs to change in this package.
	Images []Media `json:"images,omitempty"`
	// Audio is audio the tool returned.
	Audio []Media `json:"audio,omitempty"`
	// Resources are embedded resources and resource links.
	Resources []Resource `json:"resources,omitempty"`
	// Truncated says that text or data over the size limits was left out.
	Truncated bool `json:"truncated,omitempty"`
}

// Media is binary content with its media type.
type Media struct {
	MediaType string `json:"media_type"`
	// Data is the content (base64 in JSON); empty when it was over the
	// size limit (Bytes still says how big it was).
	Data  []byte `json:"data,omitempty"`
	Bytes int    `json:"bytes"`
}

// Resource is an embedded resource or a link to one.
type Resource struct {
	URI       string `json:"uri"`
	Name      string `json:"name,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Text      string `json:"text,omitempty"`
	Data      []byte `json:"data,omitempty"`
	Bytes     int    `json:"bytes,omitempty"`
	// Link is true for a resource link (the content stays on the server).
	Link bool `json:"link,omitempty"`
}

func newResult(server, tool string, res *sdk.CallToolResult) ToolResult {
	r := ToolResult{Server: server, Tool: tool}
	var texts []string
	for _, c := range res.Content {
		switch x := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, x.Text)
		case *sdk.ImageContent:
			r.Images = append(r.Images, r.media(x.MIMEType, x.Data))
		case *sdk.AudioContent:
			r.Audio = append(r.Audio, r.media(x.MIMEType, x.Data))
		case *sdk.ResourceLink:
			r.Resources = append(r.Resources, Resource{URI: x.URI, Name: x.Name, MediaType: x.MIMEType, Link: true})
		case *sdk.EmbeddedResource:
			if x.Resource == nil {
				continue
			}
			rs := Resource{URI: x.Resource.URI, MediaType: x.Resource.MIMEType, Text: x.Resource.Text}
			if len(x.Resource.Blob) > 0 {
				m := r.media(x.Resource.MIMEType, x.Resource.Blob)
				rs.Data, rs.Bytes = m.Data, m.Bytes
			}
			if len(rs.Text) > maxResultText {
				rs.Text, r.Truncated = trimText(rs.Text, maxResultText), true
			}
			r.Resources = append(r.Resources, rs)
		}
	}
	r.Text = strings.Join(texts, "\n\n")
	if len(r.Text) > maxResultText {
		r.Text, r.Truncated = trimText(r.Text, maxResultText), true
	}
	if res.StructuredContent != nil {
		// Through JSON, so the value stored is what a later step decodes.
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			if len(b) > maxResultText {
				r.Truncated = true
			} else {
				var v any
				if json.Unmarshal(b, &v) == nil {
					r.Structured = v
				}
			}
		}
	}
	return r
}

func (r *ToolResult) media(mediaType string, data []byte) Media {
	m := Media{MediaType: mediaType, Data: data, Bytes: len(data)}
	if len(data) > maxMediaBytes {
		m.Data, r.Truncated = nil, true
	}
	return m
}

// Summary is the result for prompts and the offline responder: the text
// (or the structured content), and a line for every image, audio clip and
// resource returned.
func (r ToolResult) Summary() string {
	var parts []string
	switch {
	case strings.TrimSpace(r.Text) != "":
		parts = append(parts, trimText(strings.TrimSpace(r.Text), maxSummaryText))
	case r.Structured != nil:
		b, _ := json.Marshal(r.Structured)
		parts = append(parts, trimText(string(b), maxSummaryText))
	}
	for _, m := range r.Images {
		parts = append(parts, fmt.Sprintf("[The tool returned an image (%s, %s); it is kept with the result.]", m.MediaType, size(m.Bytes)))
	}
	for _, m := range r.Audio {
		parts = append(parts, fmt.Sprintf("[The tool returned audio (%s, %s); it is kept with the result.]", m.MediaType, size(m.Bytes)))
	}
	for _, rs := range r.Resources {
		name := rs.Name
		if name == "" {
			name = rs.URI
		}
		switch {
		case rs.Link:
			parts = append(parts, fmt.Sprintf("[Resource link: %s (%s)]", name, rs.URI))
		case rs.Text != "":
			parts = append(parts, fmt.Sprintf("[Resource %s:] %s", name, trimText(rs.Text, maxSummaryText)))
		default:
			parts = append(parts, fmt.Sprintf("[Resource %s (%s, %s)]", name, rs.MediaType, size(rs.Bytes)))
		}
	}
	if r.Truncated {
		parts = append(parts, "[Part of the result was over the size limit and left out.]")
	}
	if len(parts) == 0 {
		return fmt.Sprintf("The tool %s of the MCP server %s returned nothing.", r.Tool, r.Server)
	}
	return strings.Join(parts, "\n")
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
