package review

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
	"sync"

	"idemlab/experiments/scenario"
)

// svgProlog is the XML declaration and doctype that must not appear inside
// an HTML document.
var svgProlog = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?s)^\s*<\?xml.*?\?>\s*(<!DOCTYPE[^>]*>\s*)?`)
})

// inlineSVG makes a chart embeddable in HTML. The SVG comes from our own
// plotting code, never from the folder, so it is trusted markup.
func inlineSVG(svg []byte) template.HTML {
	return template.HTML(svgProlog().ReplaceAll(svg, nil))
}

// FontStack is the report's fonts: the platform's UI font, then common
// Japanese fonts, since the articles' original titles are Japanese and a
// UI font without Han and kana draws them as boxes; sans-serif last.
const FontStack = `system-ui, -apple-system, "Segoe UI", "Noto Sans CJK JP", "Noto Sans JP", "Hiragino Sans", "Hiragino Kaku Gothic ProN", "Yu Gothic", YuGothic, Meiryo, "Source Han Sans JP", "Source Han Sans", sans-serif`

// pageCSS is the style every page of the report shares: the fonts, the
// verdict badges, the tables and their ✓/✗ cells.
const pageCSS = `body { font-family: ` + FontStack + `; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
.verdict { display: inline-block; padding: .15rem .6rem; border-radius: .3rem; font-weight: 600; color: #fff; }
.verdict.pass { background: #1a7f37; } .verdict.fail { background: #cf222e; } .verdict.inconsistent { background: #9a6700; }
.legend { font-size: .85rem; color: #57606a; } .notices li { color: #57606a; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .92rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .55rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.ok { color: #1a7f37; font-weight: 600; } td.bad { color: #cf222e; font-weight: 600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; word-break: break-all; }`

// htmlTemplate is parsed on first use, not at start-up: every worker
// process is this same binary, and parsing the page at init cost each of
// them 0.5-1 ms.
var htmlTemplate = sync.OnceValue(parseHTMLTemplate)

func parseHTMLTemplate() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"svg":   inlineSVG,
		"mark":  markClass,
		"badge": badge,
		"css":   func() template.CSS { return template.CSS(pageCSS) },
		"join":  strings.Join,
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idemlab report: {{.Folder}}</title>
<style>
{{css}}
h1 { margin-bottom: .2rem; }
figure { margin: 1rem 0 2rem; } figure svg { width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: .88rem; color: #57606a; }
.findings li { color: #cf222e; } .verdict.changed { background: #8250df; }
.lead li { margin-bottom: .3rem; } .lead details { font-size: .85rem; color: #57606a; }
</style>
</head>
<body>
<h1>idemlab report</h1>
<p>Folder <code>{{.Folder}}</code> · run {{.StartedAt}} → {{.FinishedAt}}{{if .Made}} · {{.Made}}{{end}} · {{badge .Verdict}}{{if .CodeChanged}} <span class="verdict changed">code changed</span>{{end}}</p>

<h2>Consistency</h2>
{{if .Findings}}<p>The folder does not hold together, so its verdict cannot be trusted; <code>idemlab verify</code> exits 1:</p>
<ul class="findings">{{range .Findings}}<li class="mono">{{.String}}</li>{{end}}</ul>
{{else}}<p>Every figure and verdict derives from the folder's records and its input copy (run <code>idemlab verify</code> to also compare the code, or <code>--rerun</code> to observe again).</p>{{end}}
{{if .CodeChanged}}<p>The code here is not the code that made the folder; the figures are the folder's, not this code's:</p>
<ul class="findings">{{range .CodeChanged}}<li>code changed: {{.}}</li>{{end}}</ul>{{end}}
{{if .Notices}}<ul class="notices">{{range .Notices}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>The articles beside this run</h2>
{{range .Articles}}
<section class="article" id="article-{{.ID}}">
<h3>Article {{.ID}}: {{.Title}}</h3>
<p>Reproduced by scenario <code>{{.Scenario}}</code>{{if .Unit}}; cells are {{.Unit}}{{end}}. <strong>{{.Matches}} of {{.Cells}}</strong> compared cells match the published figures.</p>
{{template "cells" .}}
{{range .Notes}}<p class="notices">{{.}}</p>{{end}}
</section>
{{else}}<p>No article table for the scenarios in this folder.</p>
{{end}}

<h2>Scenarios</h2>
{{range .Scenarios}}
<section class="scenario" id="scenario-{{.Name}}">
<h3>{{.Name}} <span class="verdict {{if .Pass}}pass{{else}}fail{{end}}">{{.VerdictText}}</span></h3>
<p>{{.Summary}}</p>
{{if .Lead}}<ul class="lead">{{range .Lead}}<li>{{.Text}}{{if .Cells}}<details><summary>{{len .Cells}} cell(s)</summary><span class="mono">{{join .Cells ", "}}</span></details>{{end}}</li>{{end}}</ul>{{end}}
<table class="settings">{{range .Settings}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>{{end}}</table>
{{range .Tables}}{{if .Title}}<h4>{{.Title}}</h4>{{end}}
<table><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td{{mark .}}>{{.}}</td>{{end}}</tr>{{end}}</tbody></table>
{{if .Legend}}<ul class="legend">{{range .Legend}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}
{{range .ReplayLines}}<p>Replay {{.Name}}:<br><code>{{.Value}}</code></p>
{{end}}<h4>Conditions: oracle vs observation</h4>
{{template "cells" .Conditions}}
{{range .Charts}}<figure id="chart-{{.Slug}}">{{svg .SVG}}<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption></figure>{{end}}
</section>
{{end}}

<h2>Environment</h2>
<table>{{range .Environment}}<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}</table>
<h2>Code and input</h2>
<table>{{range .Hashes}}<tr><th>{{.Name}}</th><td class="mono">{{.Value}}</td></tr>{{end}}</table>
</body>
</html>
{{define "cells"}}<table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td{{mark .Mark}}>{{.Text}}{{if .Mark}}{{if .Text}} {{end}}{{.Mark}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}
`))
}

// markClass colours a cell that is, or ends with, a ✓ or ✗ mark.
func markClass(m string) template.HTMLAttr {
	switch {
	case m == "✓" || strings.HasSuffix(m, " ✓"):
		return ` class="ok"`
	case m == "✗" || strings.HasSuffix(m, " ✗"):
		return ` class="bad"`
	}
	return ""
}

func badge(v string) template.HTML {
	class := "inconsistent"
	switch v {
	case "PASS":
		class = "pass"
	case "FAIL":
		class = "fail"
	}
	return template.HTML(`<span class="verdict ` + class + `">` + template.HTMLEscapeString(v) + `</span>`)
}

// RenderHTML writes one self-contained page: styles inline, charts as
// inline SVG, no script and nothing fetched.
func RenderHTML(w io.Writer, r *Report) error {
	return execute(w, htmlTemplate(), r)
}

// execute renders a whole page before writing any of it, so a template
// error leaves w untouched.
func execute(w io.Writer, t *template.Template, data any) error {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// RenderMarkdown writes the report as GitHub-flavoured Markdown. Code hosts
// do not show inline SVG, so chartRef names the file each chart was saved
// to; an empty name leaves the chart out.
func RenderMarkdown(w io.Writer, r *Report, chartRef func(scenario.Chart) string) error {
	var b strings.Builder
	made := ""
	if r.Made != "" {
		made = " · " + r.Made
	}
	changed := ""
	if len(r.CodeChanged) > 0 {
		changed = " · **code changed**"
	}
	fmt.Fprintf(&b, "# idemlab report\n\nFolder `%s` · run %s → %s%s · **%s**%s\n\n", r.Folder, r.StartedAt, r.FinishedAt, made, r.Verdict, changed)
	b.WriteString("## Consistency\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("Every figure and verdict derives from the folder's records and its input copy.\n\n")
	} else {
		b.WriteString("The folder does not hold together, so its verdict cannot be trusted; `idemlab verify` exits 1:\n\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "- ✗ `%s`\n", mdEscape(f.String()))
		}
		b.WriteString("\n")
	}
	for _, c := range r.CodeChanged {
		fmt.Fprintf(&b, "- code changed: %s\n", mdEscape(c))
	}
	for _, n := range r.Notices {
		fmt.Fprintf(&b, "- %s\n", mdEscape(n))
	}
	if len(r.Notices)+len(r.CodeChanged) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("## The articles beside this run\n\n")
	if len(r.Articles) == 0 {
		b.WriteString("No article table for the scenarios in this folder.\n\n")
	}
	for _, a := range r.Articles {
		fmt.Fprintf(&b, "### Article %s: %s\n\nReproduced by scenario `%s`", a.ID, mdEscape(a.Title), a.Scenario)
		if a.Unit != "" {
			fmt.Fprintf(&b, "; cells are %s", mdEscape(a.Unit))
		}
		fmt.Fprintf(&b, ". **%d of %d** compared cells match the published figures.\n\n", a.Matches, a.Cells)
		mdTable(&b, Table{Header: a.Header, Rows: a.Rows})
		for _, n := range a.Notes {
			fmt.Fprintf(&b, "_%s_\n\n", mdEscape(n))
		}
	}
	b.WriteString("## Scenarios\n\n")
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "### %s\n\n%s\n\n", strings.TrimSpace(s.Name+" "+mark(s.Pass)+" "+s.Verdict), mdEscape(s.Summary))
		for _, l := range s.Lead {
			fmt.Fprintf(&b, "- %s\n", mdEscape(l.Text))
		}
		if len(s.Lead) > 0 {
			b.WriteString("\n")
		}
		if len(s.Settings) > 0 {
			b.WriteString("| setting | value |\n|---|---|\n")
			for _, kv := range s.Settings {
				fmt.Fprintf(&b, "| %s | %s |\n", mdEscape(kv[0]), mdEscape(kv[1]))
			}
			b.WriteString("\n")
		}
		for _, t := range s.Tables {
			if t.Title != "" {
				fmt.Fprintf(&b, "**%s**\n\n", mdEscape(t.Title))
			}
			mdTable(&b, plainTable(t))
			for _, l := range t.Legend {
				fmt.Fprintf(&b, "- %s\n", mdEscape(l))
			}
			if len(t.Legend) > 0 {
				b.WriteString("\n")
			}
		}
		for _, p := range s.ReplayLines {
			fmt.Fprintf(&b, "Replay %s:\n\n```\n%s\n```\n\n", mdEscape(p.Name), p.Value)
		}
		mdTable(&b, s.Conditions)
		for _, c := range s.Charts {
			if ref := chartRef(c); ref != "" {
				fmt.Fprintf(&b, "![%s](%s)\n\n_%s_\n\n", mdEscape(c.Title), ref, mdEscape(c.Caption))
			}
		}
	}
	b.WriteString("## Environment\n\n| | |\n|---|---|\n")
	for _, p := range r.Environment {
		fmt.Fprintf(&b, "| %s | %s |\n", mdEscape(p.Name), mdEscape(p.Value))
	}
	b.WriteString("\n## Code and input\n\n| | |\n|---|---|\n")
	for _, p := range r.Hashes {
		fmt.Fprintf(&b, "| %s | `%s` |\n", mdEscape(p.Name), mdEscape(p.Value))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plainTable(t scenario.Table) Table {
	out := Table{Header: t.Header}
	for _, r := range t.Rows {
		var cells []scenario.Cell
		for _, c := range r {
			cells = append(cells, scenario.Cell{Text: c})
		}
		out.Rows = append(out.Rows, cells)
	}
	return out
}

func mark(pass bool) string {
	if pass {
		return "✓"
	}
	return "✗"
}

func mdTable(b *strings.Builder, t Table) {
	b.WriteString("|")
	for _, h := range t.Header {
		fmt.Fprintf(b, " %s |", mdEscape(h))
	}
	b.WriteString("\n|")
	for range t.Header {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		b.WriteString("|")
		for _, c := range row {
			text := mdEscape(c.Text)
			if c.Mark != "" {
				text = strings.TrimSpace(text + " " + c.Mark)
			}
			fmt.Fprintf(b, " %s |", text)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// mdEscape keeps table cells on one line and pipes from splitting them.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
