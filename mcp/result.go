package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capgraph/capgraph/capabilities"
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
	// Images are the images the tool returned, with their media type. An
	// image every frontend can show becomes a figure artifact of the step
	// (Artifacts): its Data moves there (Figure set), so the context store,
	// which later turns carry, keeps only its type and size. Others (an
	// unknown type, bytes that are not what the type says) stay here.
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
	// Figure is set when the image became a figure artifact of the step,
	// which holds its data.
	Figure bool `json:"figure,omitempty"`
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

// figures moves the images every frontend can show into figure artifacts
// (capabilities.NewFigure: a known image type whose bytes match it) and
// returns them.
func (r *ToolResult) figures() []capabilities.Artifact {
	var out []capabilities.Artifact
	for i := range r.Images {
		m := &r.Images[i]
		if len(m.Data) == 0 {
			continue
		}
		title := fmt.Sprintf("%s: %s", r.Server, r.Tool)
		if len(r.Images) > 1 {
			title += fmt.Sprintf(" (image %d)", i+1)
		}
		a := capabilities.NewFigure(title, m.MediaType, m.Data, fmt.Sprintf("an image the tool %s of the MCP server %s returned", r.Tool, r.Server))
		if a.Validate() != nil {
			continue
		}
		out = append(out, a)
		m.Data, m.Figure = nil, true
	}
	return out
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
		if m.Figure {
			parts = append(parts, fmt.Sprintf("[The tool returned an image (%s, %s); it is shown to the user as a figure.]", m.MediaType, size(m.Bytes)))
			continue
		}
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
