package console

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// removed are the elements RewriteEmailHTML drops with their content:
// each could load a remote resource, run script or navigate the frame.
var removed = map[atom.Atom]bool{
	atom.Script: true, atom.Img: true, atom.Picture: true, atom.Video: true, atom.Audio: true,
	atom.Source: true, atom.Object: true, atom.Embed: true, atom.Iframe: true, atom.Frame: true,
	atom.Frameset: true, atom.Link: true, atom.Base: true, atom.Meta: true, atom.Noscript: true,
	atom.Svg: true, atom.Math: true, atom.Track: true, atom.Applet: true, atom.Form: true,
	atom.Template: true,
}

// cssURL matches a CSS url(...) or @import, case-insensitively, including
// the escapes CSS allows inside an identifier ("u\72l(").
var cssURL = regexp.MustCompile(`(?i)(u|\\0*75\s?|\\u)(r|\\0*72\s?|\\r)(l|\\0*6c\s?|\\l)\s*\(|@import|expression\s*\(|image-set\s*\(|image\s*\(|src\s*\(`)

// urlAttrs are attributes whose value names a resource or a navigation.
var urlAttrs = map[string]bool{
	"src": true, "srcset": true, "href": true, "action": true, "formaction": true, "background": true,
	"poster": true, "data": true, "codebase": true, "cite": true, "longdesc": true, "usemap": true,
	"ping": true, "lowsrc": true, "dynsrc": true, "xlink:href": true, "manifest": true, "profile": true,
}

// RewriteEmailHTML rewrites an e-mail's HTML part for the console's
// sandboxed frame (docs/reviews.md, "The review console"): script, image,
// media, frame, object, link, base, meta, form and SVG elements are
// removed, each image replaced by the text "[image from HOST]" (HOST the
// src's host, "inline data" for a data: URL, "an unknown host" when
// there is none); event-handler attributes (on*) and every attribute
// naming a resource are removed, except a link's href kept as the
// data-href text shown after it; CSS url(), @import and expression() in
// style attributes and elements are neutralised. The result is a whole
// HTML document (html.Parse completes fragments, as a browser does), and
// what it contains loads nothing even without the frame's
// Content-Security-Policy, which is the first defence.
func RewriteEmailHTML(src string) string {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		// html.Parse fails only on a reader error.
		return ""
	}
	rewriteNode(doc)
	var b bytes.Buffer
	if err := html.Render(&b, doc); err != nil {
		return ""
	}
	return b.String()
}

func rewriteNode(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode {
			if removed[c.DataAtom] || strings.Contains(c.Data, ":") {
				imgs := images(c)
				if c.DataAtom == atom.Img {
					imgs = append([]*html.Node{c}, imgs...)
				}
				for _, img := range imgs {
					n.InsertBefore(&html.Node{Type: html.TextNode, Data: "[image from " + imageHost(attr(img, "src")) + "]"}, c)
				}
				n.RemoveChild(c)
				c = next
				continue
			}
			rewriteAttrs(c)
			if c.DataAtom == atom.Style {
				for t := c.FirstChild; t != nil; t = t.NextSibling {
					if t.Type == html.TextNode {
						t.Data = neutraliseCSS(t.Data)
					}
				}
			}
		}
		if c.Type == html.ElementNode || c.Type == html.DocumentNode {
			rewriteNode(c)
		}
		c = next
	}
}

// images are the img elements under n.
func images(n *html.Node) []*html.Node {
	var out []*html.Node
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Img {
			out = append(out, c)
		}
		out = append(out, images(c)...)
	}
	return out
}

func rewriteAttrs(n *html.Node) {
	kept := n.Attr[:0]
	var href string
	for _, a := range n.Attr {
		key := strings.ToLower(a.Key)
		switch {
		case a.Namespace != "", strings.HasPrefix(key, "on"), key == "srcdoc", key == "http-equiv", key == "target":
			continue
		case key == "href" && n.DataAtom == atom.A:
			href = a.Val
			continue
		case urlAttrs[key]:
			continue
		case key == "style":
			a.Val = neutraliseCSS(a.Val)
		}
		kept = append(kept, a)
	}
	n.Attr = kept
	if href != "" {
		n.Attr = append(n.Attr, html.Attribute{Key: "data-href", Val: href})
		n.Attr = append(n.Attr, html.Attribute{Key: "title", Val: href})
	}
}

// neutraliseCSS replaces every CSS construct that could load a resource
// by "blocked(".
func neutraliseCSS(css string) string {
	// Backslash escapes can rebuild any name: drop them before matching.
	css = strings.ReplaceAll(css, "\\", "")
	return cssURL.ReplaceAllString(css, "blocked(")
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if strings.EqualFold(a.Key, key) {
			return a.Val
		}
	}
	return ""
}

// imageHost names where an image's src would load from.
func imageHost(src string) string {
	src = strings.TrimSpace(src)
	if strings.HasPrefix(strings.ToLower(src), "data:") {
		return "inline data"
	}
	if strings.HasPrefix(strings.ToLower(src), "cid:") {
		return "the message itself"
	}
	u, err := url.Parse(src)
	if err != nil || u.Hostname() == "" {
		return "an unknown host"
	}
	return u.Hostname()
}
