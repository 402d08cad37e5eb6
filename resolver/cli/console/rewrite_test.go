package console

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// inert reports what, in the rewritten document out, could still load,
// run or navigate: "" when nothing.
func inert(out string) string {
	doc, err := html.Parse(strings.NewReader(out))
	if err != nil {
		return "unparsable: " + err.Error()
	}
	var bad string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if removed[n.DataAtom] {
				bad = "element " + n.Data
			}
			for _, a := range n.Attr {
				k := strings.ToLower(a.Key)
				if strings.HasPrefix(k, "on") || urlAttrs[k] || k == "srcdoc" || k == "http-equiv" {
					bad = "attribute " + k + " on " + n.Data
				}
				if k == "style" && cssURL.MatchString(strings.ReplaceAll(a.Val, "\\", "")) {
					bad = "style url on " + n.Data
				}
			}
			if n.Data == "style" {
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					if cssURL.MatchString(strings.ReplaceAll(c.Data, "\\", "")) {
						bad = "style element url"
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return bad
}

func TestRewriteEmailHTMLLeavesNothingThatLoads(t *testing.T) {
	cases := map[string]struct{ in, placeholder string }{
		"script":        {`<p>a<script>fetch("http://127.0.0.1:9/")</script></p>`, ""},
		"image":         {`<img src="https://cdn.example.com/a.png" onerror="x()">`, "[image from cdn.example.com]"},
		"inline image":  {`<img src="data:image/png;base64,AAAA">`, "[image from inline data]"},
		"picture":       {`<picture><source srcset="http://a.example/x"><img src="http://b.example/y"></picture>`, "[image from b.example]"},
		"meta refresh":  {`<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/">`, ""},
		"css url":       {`<style>p{background:URL(http://127.0.0.1:9/)} @import "http://x/";</style><p style="background-image:u\72l(http://x/)">x</p>`, ""},
		"link and base": {`<link rel=stylesheet href="http://x/c.css"><base href="http://x/"><a href="http://x/">t</a>`, ""},
		"svg":           {`<svg><image href="http://x/i.png"/><script>1</script></svg>`, ""},
		"form":          {`<form action="http://x/"><button formaction="http://x/">b</button></form>`, ""},
		"background":    {`<table background="http://x/t.png"><tr><td background="http://x/c.png">c</td></tr></table>`, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out := RewriteEmailHTML(c.in)
			if bad := inert(out); bad != "" {
				t.Fatalf("RewriteEmailHTML(%q) = %q: %s remains", c.in, out, bad)
			}
			if c.placeholder != "" && !strings.Contains(out, c.placeholder) {
				t.Fatalf("RewriteEmailHTML(%q) = %q: want %q", c.in, out, c.placeholder)
			}
		})
	}
}

func FuzzRewriteEmailHTML(f *testing.F) {
	for _, s := range []string{
		`<p>hi<img src="http://a.example/x"></p>`,
		`<style>p{background:url(http://x/)}</style>`,
		`<div style="background:u\72l(x)">`,
		`<svg><script>1</script></svg><math><mi xlink:href="x">`,
		`<noscript><img src=x></noscript><template><img src=y></template>`,
		`<a href="javascript:alert(1)" onclick="x">l</a><meta http-equiv=refresh content=0>`,
		`<table><img src=z><tr><td>x</table>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := RewriteEmailHTML(in)
		if bad := inert(out); bad != "" {
			t.Fatalf("RewriteEmailHTML(%q) = %q: %s remains", in, out, bad)
		}
	})
}
