package review

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
	"sync"
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

// htmlTemplate is parsed on first use, not at start-up: every worker
// process is this same binary, and parsing the page at init cost each of
// them 0.5-1 ms.
var htmlTemplate = sync.OnceValue(parseHTMLTemplate)

func parseHTMLTemplate() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"svg":  inlineSVG,
		"mark": markClass,
	}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idemlab report: {{.Folder}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { margin-bottom: .2rem; }
.verdict { display: inline-block; padding: .15rem .6rem; border-radius: .3rem; font-weight: 600; color: #fff; }
.verdict.pass { background: #1a7f37; } .verdict.fail { background: #cf222e; }
table { border-collapse: collapse; margin: .6rem 0 1rem; font-size: .92rem; }
th, td { border: 1px solid #d0d7de; padding: .3rem .55rem; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.ok { color: #1a7f37; font-weight: 600; } td.bad { color: #cf222e; font-weight: 600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .85rem; word-break: break-all; }
figure { margin: 1rem 0 2rem; } figure svg { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { font-size: .88rem; color: #57606a; }
.findings li { color: #cf222e; } .notices li { color: #57606a; }
</style>
</head>
<body>
<h1>idemlab report</h1>
<p>Folder <code>{{.Folder}}</code> · run {{.StartedAt}} → {{.FinishedAt}} ·
{{if .Pass}}<span class="verdict pass">PASS</span>{{else}}<span class="verdict fail">FAIL</span>{{end}}</p>

<h2>Consistency</h2>
{{if .Findings}}<p>The folder does not hold together; <code>idemlab verify</code> would exit 1:</p>
<ul class="findings">{{range .Findings}}<li class="mono">{{.String}}</li>{{end}}</ul>
{{else}}<p>Results, observations and processes agree with each other (hashes are checked by <code>idemlab verify</code>).</p>{{end}}
{{if .Notices}}<ul class="notices">{{range .Notices}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>The articles beside this run</h2>
{{range .Articles}}
<section class="article" id="article-{{.ID}}">
<h3>Article {{.ID}}: {{.Title}}</h3>
<p>Source <code>{{.Source}}</code>; reproduced by scenario <code>{{.Scenario}}</code>{{if .Unit}}; cells are {{.Unit}}{{end}}. {{.Matches}} of {{.Cells}} cells match the published figures.</p>
{{template "table" .Table}}
{{range .Notes}}<p class="notices">{{.}}</p>{{end}}
</section>
{{else}}<p>No article table for the scenarios in this folder.</p>
{{end}}

<h2>Scenarios: expected (oracle) vs observed</h2>
{{range .Scenarios}}
<section class="scenario" id="scenario-{{.Name}}">
<h3>{{.Name}} {{if .Pass}}<span class="verdict pass">PASS</span>{{else}}<span class="verdict fail">FAIL</span>{{end}}</h3>
<p>Settings: <code>{{.Settings}}</code></p>
{{template "table" .Conditions}}
{{range .Charts}}<figure id="chart-{{.Slug}}">{{svg .SVG}}<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption></figure>{{end}}
</section>
{{end}}

<h2>Environment</h2>
<table>{{range .Environment}}<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}</table>
<h2>Hashes</h2>
<table>{{range .Hashes}}<tr><th>{{.Name}}</th><td class="mono">{{.Value}}</td></tr>{{end}}</table>
</body>
</html>
{{define "table"}}<table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td{{mark .Mark}}>{{.Text}}{{if .Mark}}{{if .Text}} {{end}}{{.Mark}}{{end}}</td>{{end}}</tr>
{{end}}</tbody>
</table>{{end}}
`))
}

func markClass(m string) template.HTMLAttr {
	switch m {
	case "✓":
		return ` class="ok"`
	case "✗":
		return ` class="bad"`
	}
	return ""
}

// RenderHTML writes one self-contained page: styles inline, charts as
// inline SVG, no script and nothing fetched.
func RenderHTML(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	if err := htmlTemplate().Execute(&buf, r); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// RenderMarkdown writes the report as GitHub-flavoured Markdown. Code hosts
// do not show inline SVG, so chartRef names the file each chart was saved
// to; an empty name leaves the chart out.
func RenderMarkdown(w io.Writer, r *Report, chartRef func(Chart) string) error {
	var b strings.Builder
	verdict := "PASS ✓"
	if !r.Pass {
		verdict = "FAIL ✗"
	}
	fmt.Fprintf(&b, "# idemlab report\n\nFolder `%s` · run %s → %s · **%s**\n\n", r.Folder, r.StartedAt, r.FinishedAt, verdict)
	b.WriteString("## Consistency\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("Results, observations and processes agree with each other (hashes are checked by `idemlab verify`).\n\n")
	} else {
		b.WriteString("The folder does not hold together; `idemlab verify` would exit 1:\n\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "- ✗ `%s`\n", mdEscape(f.String()))
		}
		b.WriteString("\n")
	}
	for _, n := range r.Notices {
		fmt.Fprintf(&b, "- %s\n", mdEscape(n))
	}
	if len(r.Notices) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("## The articles beside this run\n\n")
	if len(r.Articles) == 0 {
		b.WriteString("No article table for the scenarios in this folder.\n\n")
	}
	for _, a := range r.Articles {
		fmt.Fprintf(&b, "### Article %s: %s\n\nSource `%s`; reproduced by scenario `%s`", a.ID, mdEscape(a.Title), a.Source, a.Scenario)
		if a.Unit != "" {
			fmt.Fprintf(&b, "; cells are %s", mdEscape(a.Unit))
		}
		fmt.Fprintf(&b, ". %d of %d cells match the published figures.\n\n", a.Matches, a.Cells)
		mdTable(&b, a.Table)
		for _, n := range a.Notes {
			fmt.Fprintf(&b, "_%s_\n\n", mdEscape(n))
		}
	}
	b.WriteString("## Scenarios: expected (oracle) vs observed\n\n")
	for _, s := range r.Scenarios {
		fmt.Fprintf(&b, "### %s %s\n\nSettings: `%s`\n\n", s.Name, mark(s.Pass), s.Settings)
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
	b.WriteString("\n## Hashes\n\n| | |\n|---|---|\n")
	for _, p := range r.Hashes {
		fmt.Fprintf(&b, "| %s | `%s` |\n", mdEscape(p.Name), mdEscape(p.Value))
	}
	_, err := io.WriteString(w, b.String())
	return err
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
