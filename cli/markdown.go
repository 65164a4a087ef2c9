package cli

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/glamour/styles"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// The assistant's messages are Markdown (what every chat frontend renders).
// The terminal renders it: with glamour's styles on an interactive
// terminal, as plain text otherwise (a pipe, a file, TERM=dumb), so neither
// shows "**What failed:**" or a "<details>" tag.

// details is a folded block (<details><summary>Title</summary> … </details>)
// such as the error report's technical part: a terminal cannot fold, so it
// shows the title in bold and the content under it.
var (
	detailsOpen  = regexp.MustCompile(`(?m)^[ \t]*<details[^>]*>[ \t]*\n?[ \t]*<summary>(.*?)</summary>[ \t]*$`)
	detailsClose = regexp.MustCompile(`(?m)^[ \t]*</details>[ \t]*$`)
	// bullet is a line of an offline answer starting with "• ": Markdown
	// joins such lines into one paragraph, so they become list items.
	bullet = regexp.MustCompile(`(?m)^• `)
)

// terminalMarkdown prepares a message for rendering: folded blocks opened
// under a heading, "• " lines as list items.
func terminalMarkdown(md string) string {
	md = detailsOpen.ReplaceAllString(md, "**$1:**\n")
	md = detailsClose.ReplaceAllString(md, "")
	return bullet.ReplaceAllString(md, "- ")
}

// renderMarkdown renders a message for the command's stdout: styled for an
// interactive terminal of the given width, else plain text. A message the
// renderer cannot render is shown as it is.
func renderMarkdown(md string, terminal bool, width int, getenv func(string) string) string {
	md = terminalMarkdown(md)
	if !terminal {
		return plainText(md)
	}
	style := styles.DarkStyle
	if getenv("NO_COLOR") != "" {
		style = styles.AsciiStyle
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(max(width-4, 20)),
		glamour.WithEmoji(), glamour.WithPreservedNewLines())
	if err != nil {
		return md
	}
	out, err := r.Render(md)
	if err != nil {
		return md
	}
	return strings.Trim(out, "\n")
}

var plainParser = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))

// plainText renders Markdown as plain text: emphasis and code marks
// dropped, links as "text (address)", list items as "• ", code blocks
// indented, table rows as cells between " | ", HTML tags left out; the
// lines of a paragraph stay lines.
func plainText(md string) string {
	src := []byte(md)
	doc := plainParser.Parser().Parse(text.NewReader(src))
	var b strings.Builder
	writePlain(&b, doc, src, "")
	return strings.TrimSpace(collapseBlankLines(b.String()))
}

// writePlain writes the blocks under n, each line after prefix.
func writePlain(b *strings.Builder, n ast.Node, src []byte, prefix string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Heading, *ast.Paragraph, *ast.TextBlock:
			t := inlineText(c, src)
			b.WriteString(prefix + strings.ReplaceAll(t, "\n", "\n"+prefix) + "\n")
			_, tight := c.(*ast.TextBlock)
			_, heading := c.(*ast.Heading)
			if _, list := c.NextSibling().(*ast.List); !tight && !heading && !(list && strings.HasSuffix(t, ":")) {
				// A paragraph introducing a list ("What was done:") stays with it.
				b.WriteString("\n")
			}
		case *ast.List:
			n := c.Start
			for item := c.FirstChild(); item != nil; item = item.NextSibling() {
				mark := "• "
				if c.IsOrdered() {
					mark = strconv.Itoa(n) + ". "
					n++
				}
				var ib strings.Builder
				writePlain(&ib, item, src, "")
				lines := strings.Split(strings.TrimRight(ib.String(), "\n"), "\n")
				for i, l := range lines {
					if i == 0 {
						b.WriteString(prefix + mark + l + "\n")
					} else if l != "" {
						b.WriteString(prefix + strings.Repeat(" ", utf8.RuneCountInString(mark)) + l + "\n")
					}
				}
			}
			b.WriteString("\n")
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			lines := c.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				b.WriteString(prefix + "    " + strings.TrimRight(string(seg.Value(src)), "\n") + "\n")
			}
			b.WriteString("\n")
		case *ast.Blockquote:
			writePlain(b, c, src, prefix+"> ")
		case *ast.ThematicBreak:
			b.WriteString(prefix + "---\n\n")
		case *ast.HTMLBlock:
			// Tags are left out; text between them stays.
			var raw strings.Builder
			lines := c.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				raw.Write(seg.Value(src))
			}
			if t := strings.TrimSpace(htmlTag.ReplaceAllString(raw.String(), "")); t != "" {
				b.WriteString(prefix + t + "\n\n")
			}
		case *east.Table:
			for row := c.FirstChild(); row != nil; row = row.NextSibling() {
				var cells []string
				for cell := row.FirstChild(); cell != nil; cell = cell.NextSibling() {
					cells = append(cells, inlineText(cell, src))
				}
				b.WriteString(prefix + strings.Join(cells, " | ") + "\n")
			}
			b.WriteString("\n")
		default:
			writePlain(b, c, src, prefix)
		}
	}
}

var htmlTag = regexp.MustCompile(`<[^>]*>`)

// inlineText is the text of an inline run: marks dropped, soft line breaks
// kept as line breaks.
func inlineText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteString("\n")
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.CodeSpan:
			var cb bytes.Buffer
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if tx, ok := t.(*ast.Text); ok {
					cb.Write(tx.Segment.Value(src))
				}
			}
			b.Write(cb.Bytes())
		case *ast.Link:
			label := inlineText(c, src)
			dest := string(c.Destination)
			if dest == "" || dest == label {
				b.WriteString(label)
			} else {
				b.WriteString(label + " (" + dest + ")")
			}
		case *ast.AutoLink:
			b.Write(c.URL(src))
		case *ast.Image:
			b.WriteString("[image: " + inlineText(c, src) + "] (" + string(c.Destination) + ")")
		case *ast.RawHTML:
			// Inline tags are left out.
		default:
			b.WriteString(inlineText(c, src))
		}
	}
	return b.String()
}

// collapseBlankLines leaves at most one blank line between blocks.
func collapseBlankLines(s string) string {
	for strings.Contains(s, "\n\n\n") {
		s = strings.ReplaceAll(s, "\n\n\n", "\n\n")
	}
	return s
}
