package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/net/idna"

	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/tool"
)

// MaxDecided is how many recent decisions the list shows: approved and
// rejected reviews together, newest decision first.
const MaxDecided = 20

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"esc": func(s string) string { return invisible.Escape(s) },
}).ParseFS(assets, "assets/*.html"))

// render executes page into a buffer first, so that a template error
// sends a 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, status int, page string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, page, data); err != nil {
		s.log.Error("console page failed", "page", page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

type refusedPage struct{ Title, Text string }

// reviewRow is one review in a list.
type reviewRow struct {
	ID, Tool, Solution, Run, Step, Requester, CreatedAt, ExpiresAt, Status, Approver, DecidedAt string
	Left                                                                                        string
}

type parkRow struct{ ID, Cause, Tool, Step, Run, CreatedAt, Deadline string }

type listPage struct {
	Pending          []reviewRow
	Solutions, Tools []string
	Solution, Tool   string
	Decided          []reviewRow
	Parks            []parkRow
	Problems         []string
}

func solutionOf(v review.View) string {
	if v.Solution == "" {
		return ""
	}
	if v.SolutionVersion != "" {
		return v.Solution + " " + v.SolutionVersion
	}
	return v.Solution
}

func rowOf(v review.View) reviewRow {
	t := v.Tool
	if v.Kind == tool.ReviewShow {
		t = "(shows values)"
	}
	return reviewRow{ID: v.ReviewID, Tool: t, Solution: solutionOf(v), Run: v.RunID, Step: v.Step, Requester: v.Requester,
		CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt, Status: strings.ToLower(string(v.Status)), Approver: v.Approver, DecidedAt: v.DecidedAt}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := listPage{Solution: r.URL.Query().Get("solution"), Tool: r.URL.Query().Get("tool")}
	pending, err := s.b.List(ctx, "pending")
	if err != nil {
		p.Problems = append(p.Problems, "pending reviews: "+refusalText(err))
	}
	sols, tools := map[string]bool{}, map[string]bool{}
	for _, v := range pending.Reviews {
		row := rowOf(v)
		if row.Solution != "" {
			sols[row.Solution] = true
		}
		tools[row.Tool] = true
		if p.Solution != "" && row.Solution != p.Solution || p.Tool != "" && row.Tool != p.Tool {
			continue
		}
		row.Left = s.expiresIn(row.ExpiresAt)
		p.Pending = append(p.Pending, row)
	}
	p.Solutions, p.Tools = sortedKeys(sols), sortedKeys(tools)
	for _, st := range []string{"approved", "rejected"} {
		res, err := s.b.List(ctx, st)
		if err != nil {
			p.Problems = append(p.Problems, st+" reviews: "+refusalText(err))
			continue
		}
		for _, v := range res.Reviews {
			p.Decided = append(p.Decided, rowOf(v))
		}
	}
	sort.SliceStable(p.Decided, func(i, j int) bool { return p.Decided[i].DecidedAt > p.Decided[j].DecidedAt })
	if len(p.Decided) > MaxDecided {
		p.Decided = p.Decided[:MaxDecided]
	}
	parks, err := s.b.ParkList(ctx, "parked")
	if err != nil {
		p.Problems = append(p.Problems, "parked calls: "+refusalText(err))
	}
	for _, v := range parks.Parks {
		p.Parks = append(p.Parks, parkRow{ID: v.ParkID, Cause: string(v.Cause), Tool: v.Tool, Step: v.Step, Run: v.RunID, CreatedAt: v.CreatedAt, Deadline: v.Deadline})
	}
	s.render(w, http.StatusOK, "list", p)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// refusalText is err in words for the page: a review-decision refusal
// by its code (shared/review errors.go), anything else as a failure to
// reach the function (never its text, which may name an endpoint or a
// credential problem in detail: that goes to the terminal's log).
func refusalText(err error) string {
	var ref *Refusal
	if !errors.As(err, &ref) {
		return "review-decision could not be reached; try again"
	}
	words := map[string]string{
		string(review.CodeExpired):         "this review has expired: no decision can be taken any more",
		string(review.CodeSelfApproval):    "you asked for this review: another reviewer must decide it",
		string(review.CodeConflict):        "this was already decided (or its input no longer matches what was reviewed)",
		string(review.CodeForbidden):       "you are not a reviewer of this: your identity matches none of its reviewers",
		string(review.CodeTaskEnded):       "the run no longer waits for this decision",
		string(review.CodeUnauthenticated): "review-decision did not accept your identity (its reason follows)",
		string(review.CodeInvalid):         "review-decision refused the request as malformed",
		string(review.CodeNotFound):        "there is no such review or parked call (it may have ended)",
		string(review.CodeUnavailable):     "review-decision is unavailable for now; the same decision may be sent again",
	}[ref.Code]
	if words == "" {
		words = "review-decision could not take the decision"
	}
	if ref.Message != "" {
		words += " (review-decision: " + invisible.Escape(ref.Message) + ")"
	}
	return words
}

// decisionRefusalText is err in words for a review's decision: as
// refusalText, but a decision's caller proof is bound to the input
// digest the page showed (review.DecideBinding), so an unaccepted proof
// is said to be that digest changed or the identity.
func decisionRefusalText(err error) string {
	var ref *Refusal
	if errors.As(err, &ref) && ref.Code == string(review.CodeUnauthenticated) {
		words := "the decision was refused: the input digest changed since this page showed it, or your identity could not be proven; reload the page"
		if ref.Message != "" {
			words += " (review-decision: " + invisible.Escape(ref.Message) + ")"
		}
		return words
	}
	return refusalText(err)
}

// parkRefusalText is err in words for a parked call's decision: as
// refusalText, but a parked call has no requester nor input digest of
// its own (docs/parking.md): its run's starter (or who held what started
// it) may not decide it, and its decision is bound to the tool's current
// definition.
func parkRefusalText(err error) string {
	var ref *Refusal
	if errors.As(err, &ref) {
		words := map[string]string{
			string(review.CodeSelfApproval):    "you started this run (or held what started it): another decider must decide this parked call",
			string(review.CodeUnauthenticated): "the decision was refused: the tool's definition changed since this page showed it, or your identity could not be proven; reload the page",
			string(review.CodeForbidden):       "you may not decide this parked call: your identity is not one of its deciders",
		}[ref.Code]
		if words != "" {
			if ref.Message != "" {
				words += " (review-decision: " + invisible.Escape(ref.Message) + ")"
			}
			return words
		}
	}
	return refusalText(err)
}

// refusalStatus is the status of a page re-rendered after a refusal.
func refusalStatus(err error) int {
	var ref *Refusal
	if !errors.As(err, &ref) {
		return http.StatusBadGateway
	}
	switch review.Code(ref.Code) {
	case review.CodeSelfApproval, review.CodeForbidden, review.CodeUnauthenticated:
		return http.StatusForbidden
	case review.CodeInvalid:
		return http.StatusBadRequest
	case review.CodeNotFound:
		return http.StatusNotFound
	case review.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusConflict
}

// address is an e-mail address as the page shows it.
type address struct {
	Text    string // invisible/bidi characters escaped
	Unicode string // the address with its domain in Unicode, when its domain is an IDN
	ALabel  string // the address with its domain's A-labels, when its domain is an IDN
	Verdict string // allow, refuse, invalid or unknown
	Rule    string
}

func addressOf(a review.AddressVerdict) address {
	out := address{Text: invisible.Escape(a.Address), Verdict: a.Verdict, Rule: a.Rule}
	if out.Verdict == "" {
		out.Verdict = "unknown"
	}
	at := strings.LastIndexByte(a.Address, '@')
	if at < 0 {
		return out
	}
	local, domain := a.Address[:at], a.Address[at+1:]
	ascii, err1 := idna.Lookup.ToASCII(domain)
	uni, err2 := idna.Lookup.ToUnicode(domain)
	if err1 == nil && err2 == nil && ascii != uni {
		out.Unicode, out.ALabel = invisible.Escape(local+"@"+uni), local+"@"+ascii
	}
	return out
}

type emailView struct {
	From                 *address
	To, Cc, Bcc, ReplyTo []address
	Subject, Text        string
	HasText              bool
	HasHTML              bool
}

type httpView struct {
	// Host is the URL's host (RFC 3986 §3.2.2): where the request goes,
	// whatever user information before it reads like.
	Method, URL, Host, Body string
	Headers                 []node
}

// shownMembers are the input members the e-mail and HTTP views show in
// their own fields; any other member of the input is shown as a tree
// (#input-other), so that no member of the call is hidden.
var shownMembers = map[string][]string{
	"email": {"to", "cc", "bcc", "reply_to", "subject", "text", "html"},
	"http":  {"method", "url", "headers", "body"},
}

// otherMembers are input's members not in shown, as a tree with their
// schema's descriptions; nil when none.
func otherMembers(input map[string]json.RawMessage, schema json.RawMessage, shown []string) []node {
	rest := map[string]json.RawMessage{}
	for k, v := range input {
		if !slices.Contains(shown, k) {
			rest[k] = v
		}
	}
	if len(rest) == 0 {
		return nil
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return nil
	}
	return tree(b, schema)
}

// node is one member of the input tree.
type node struct {
	Key, Desc, Value string
	Children         []node
}

// field is one input of the ask form.
type field struct {
	Name, Label, Desc, Kind, Value string
	Options                        []option
	Required                       bool
}

type option struct{ Value, Label string }

type editField struct {
	Name, Form, Value string
	Multiline         bool
}

type diffRow struct{ Member, Before, After string }

type runCall struct{ Seq, Step, Tool, Status, At string }

type reviewPage struct {
	ID, CSRF, Tool, Kind, Solution, Digest, Run, Step, Requester, CreatedAt, ExpiresAt string
	Status, Approver, DecidedAt, Reason, Lane                                          string
	Pending, Expired                                                                   bool
	Reviewers                                                                          []string
	Email                                                                              *emailView
	HTTP                                                                               *httpView
	Tree, Other                                                                        []node
	Values                                                                             string
	Ask                                                                                []field
	Edits                                                                              []editField
	Diff                                                                               []diffRow
	EditedDigest                                                                       string
	RunCalls                                                                           []runCall
	Outcome, Refusal, Left                                                             string
}

func (s *Server) showReview(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := s.b.Show(r.Context(), id)
	if err != nil {
		s.render(w, refusalStatus(err), "refused", refusedPage{Title: "Review " + id, Text: refusalText(err)})
		return
	}
	s.render(w, http.StatusOK, "review", s.reviewPageOf(v, nil))
}

// reviewPageOf is v as the review page shows it; form, when not nil, is
// a submitted form whose answer and edits prefill the page.
func (s *Server) reviewPageOf(v review.View, form map[string][]string) reviewPage {
	p := reviewPage{Left: s.expiresIn(v.ExpiresAt), ID: v.ReviewID, CSRF: s.csrf("/reviews/" + v.ReviewID), Tool: v.Tool, Kind: string(v.Kind), Solution: solutionOf(v),
		Digest: v.InputDigest, Run: v.RunID, Step: v.Step, Requester: v.Requester, CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt,
		Status: strings.ToLower(string(v.Status)), Approver: v.Approver, DecidedAt: v.DecidedAt, Reason: invisible.Escape(v.Reason),
		Lane: v.Lane, Pending: v.Status == review.Pending && !v.Expired, Expired: v.Expired, Reviewers: v.Reviewers}
	for _, c := range v.RunCalls {
		p.RunCalls = append(p.RunCalls, runCall(c))
	}
	switch {
	case v.Status == review.Approved:
		p.Outcome = "approved by " + v.Approver + "; the run continues"
	case v.Status == review.Rejected:
		p.Outcome = "rejected by " + v.Approver + "; the run takes its rejection route"
	case v.Expired:
		p.Outcome = "expired: no decision can be taken"
	}
	var input map[string]json.RawMessage
	_ = json.Unmarshal(v.Input, &input)
	switch {
	case v.Kind == tool.ReviewShow:
		p.Tool = "(shows values)"
		p.Values = prettyJSON(v.Input)
	case v.Email != nil || v.Tool == "send-email":
		p.Email = emailOf(v, input)
		p.Other = otherMembers(input, v.InputSchema, shownMembers["email"])
	case v.Tool == "http":
		p.HTTP = &httpView{Method: jsonText(input["method"]), URL: jsonText(input["url"]), Body: prettyJSON(input["body"])}
		if p.HTTP.Method == "" {
			p.HTTP.Method = "GET"
		}
		var raw string
		if json.Unmarshal(input["url"], &raw) == nil {
			if u, err := url.Parse(raw); err == nil {
				p.HTTP.Host = invisible.Escape(u.Host)
			}
		}
		if h := input["headers"]; len(h) > 0 && string(h) != "null" {
			p.HTTP.Headers = tree(h, nil)
		}
		p.Other = otherMembers(input, v.InputSchema, shownMembers["http"])
	default:
		p.Tree = tree(v.Input, v.InputSchema)
		if t := bytes.TrimSpace(v.Input); p.Tree == nil && len(t) > 0 && t[0] != '{' && t[0] != '[' {
			// A scalar input (a string, number, boolean or null) is one
			// leaf: a call is never shown without its input.
			p.Tree = []node{leafOrTree("(the input)", v.Input, v.InputSchema, 0)}
		}
	}
	p.Ask = askFields(v.Ask, form)
	for _, name := range v.Editable {
		// The field holds the member as it is (a string's own text), so
		// that submitting it unchanged edits nothing; the page shows it
		// escaped everywhere else.
		val := editText(input[name])
		if form != nil {
			if f, ok := form["edit."+name]; ok && len(f) > 0 {
				val = f[0]
			}
		}
		p.Edits = append(p.Edits, editField{Name: invisible.Escape(name), Form: "edit." + name, Value: val, Multiline: multiline(val)})
	}
	return p
}

// multiline is whether an edit field holding val is a textarea: val has
// a line break (a text input strips them) or is over 80 bytes.
func multiline(val string) bool { return strings.ContainsAny(val, "\r\n") || len(val) > 80 }

// untouched is what a browser submits for an edit field holding val that
// the reviewer left as it was (WHATWG HTML): the input stream turns CRLF
// and CR into LF, html/template writes U+0000 as U+FFFD, a text input
// strips line breaks from its value and a textarea submits its line
// breaks as CRLF. A submitted value equal to it is no edit.
func untouched(val string) string {
	v := strings.ReplaceAll(val, "\x00", "\uFFFD")
	v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	if multiline(val) {
		return strings.ReplaceAll(v, "\n", "\r\n")
	}
	return strings.ReplaceAll(v, "\n", "")
}

// editText is a JSON string's own text, or any other JSON value's text:
// an edit field's value, unescaped.
func editText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// jsonText is a JSON string's text, or any other JSON value's text,
// invisible characters escaped; "" for nothing.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return invisible.Escape(s)
	}
	return string(invisible.EscapeJSON(raw))
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(invisible.EscapeJSON(raw))
	}
	return string(invisible.EscapeJSON(b.Bytes()))
}

func emailOf(v review.View, input map[string]json.RawMessage) *emailView {
	e := &emailView{Subject: jsonText(input["subject"])}
	var text, htm *string
	_ = json.Unmarshal(input["text"], &text)
	_ = json.Unmarshal(input["html"], &htm)
	if text != nil {
		e.HasText, e.Text = true, invisible.Escape(*text)
	}
	e.HasHTML = htm != nil
	list := func(vs []review.AddressVerdict) []address {
		var out []address
		for _, a := range vs {
			out = append(out, addressOf(a))
		}
		return out
	}
	// The input's recipients, verdict unknown: a list the show answer
	// does not carry (none at all, or a review-decision that predates
	// the list) is still shown.
	fromInput := func(name string) []address {
		var as []json.RawMessage
		if json.Unmarshal(input[name], &as) != nil && len(input[name]) > 0 && string(input[name]) != "null" {
			as = []json.RawMessage{input[name]} // not an array: shown as it is
		}
		var out []address
		for _, raw := range as {
			var a string
			if json.Unmarshal(raw, &a) != nil {
				out = append(out, address{Text: jsonText(raw), Verdict: "invalid", Rule: "is not a string"})
				continue
			}
			out = append(out, addressOf(review.AddressVerdict{Address: a, Verdict: "unknown"}))
		}
		return out
	}
	e.To, e.Cc, e.Bcc, e.ReplyTo = fromInput("to"), fromInput("cc"), fromInput("bcc"), fromInput("reply_to")
	if v.Email == nil {
		return e
	}
	if v.Email.From.Address != "" {
		f := addressOf(v.Email.From)
		e.From = &f
	}
	for _, l := range []struct {
		got []review.AddressVerdict
		dst *[]address
	}{{v.Email.To, &e.To}, {v.Email.Cc, &e.Cc}, {v.Email.Bcc, &e.Bcc}, {v.Email.ReplyTo, &e.ReplyTo}} {
		if l.got != nil {
			*l.dst = list(l.got)
		}
	}
	return e
}

// schemaNode is the part of a JSON Schema the tree and the ask form read.
type schemaNode struct {
	Type        any                        `json:"type"`
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	Enum        []json.RawMessage          `json:"enum"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Required    []string                   `json:"required"`
	Items       json.RawMessage            `json:"items"`
}

func parseSchema(raw json.RawMessage) schemaNode {
	var n schemaNode
	_ = json.Unmarshal(raw, &n)
	return n
}

// MaxTreeDepth is how many levels the input tree nests: a member deeper
// is shown as its JSON text. Each level reads its own value again, so
// the tree costs its depth times the input's size.
const MaxTreeDepth = 32

// tree is input as nested nodes, each with its schema's description.
func tree(input, schema json.RawMessage) []node { return treeAt(input, schema, 0) }

func treeAt(input, schema json.RawMessage, depth int) []node {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil || obj == nil {
		var arr []json.RawMessage
		if json.Unmarshal(input, &arr) == nil && arr != nil {
			items := parseSchema(schema).Items
			out := make([]node, len(arr))
			for i, el := range arr {
				out[i] = leafOrTree("["+itoa(i)+"]", el, items, depth)
			}
			return out
		}
		return nil
	}
	sch := parseSchema(schema)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]node, len(keys))
	for i, k := range keys {
		out[i] = leafOrTree(k, obj[k], sch.Properties[k], depth)
	}
	return out
}

func leafOrTree(key string, val, schema json.RawMessage, depth int) node {
	sch := parseSchema(schema)
	n := node{Key: invisible.Escape(key), Desc: invisible.Escape(sch.Description)}
	t := bytes.TrimSpace(val)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && depth < MaxTreeDepth {
		n.Children = treeAt(val, schema, depth+1)
		if len(n.Children) == 0 {
			n.Value = string(t)
		}
		return n
	}
	n.Value = string(invisible.EscapeJSON(t))
	return n
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// askFields is the ask form built from the question's schema: one field
// "answer" for a string, number, integer, boolean or enum, one
// "answer.MEMBER" per property of an object of those, and otherwise one
// JSON text field "answer".
func askFields(ask json.RawMessage, form map[string][]string) []field {
	if len(ask) == 0 {
		return nil
	}
	sch := parseSchema(ask)
	prefill := func(f field) field {
		if vs, ok := form[f.Name]; ok && len(vs) > 0 {
			f.Value = vs[0]
		}
		return f
	}
	if typeOf(sch) == "object" && len(sch.Properties) > 0 {
		names := make([]string, 0, len(sch.Properties))
		for k := range sch.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		var out []field
		for _, k := range names {
			f := scalarField("answer."+k, k, parseSchema(sch.Properties[k]))
			f.Required = slices.Contains(sch.Required, k)
			out = append(out, prefill(f))
		}
		return out
	}
	f := scalarField("answer", "answer", sch)
	f.Required = true
	return []field{prefill(f)}
}

func typeOf(s schemaNode) string {
	if t, ok := s.Type.(string); ok {
		return t
	}
	return ""
}

func scalarField(name, label string, s schemaNode) field {
	f := field{Name: name, Label: invisible.Escape(label), Desc: invisible.Escape(s.Description)}
	if s.Title != "" {
		f.Label = invisible.Escape(s.Title)
	}
	switch {
	case len(s.Enum) > 0:
		f.Kind = "enum"
		for _, e := range s.Enum {
			f.Options = append(f.Options, option{Value: string(e), Label: jsonText(e)})
		}
	case typeOf(s) == "string":
		f.Kind = "text"
	case typeOf(s) == "number" || typeOf(s) == "integer":
		f.Kind = "number"
	case typeOf(s) == "boolean":
		f.Kind = "enum"
		f.Options = []option{{"true", "yes (true)"}, {"false", "no (false)"}}
	default:
		f.Kind = "json"
	}
	return f
}

// answerOf builds the answer JSON from a submitted form for the question
// ask; nil when ask is empty or nothing was given.
func answerOf(ask json.RawMessage, form map[string][]string) (json.RawMessage, error) {
	fields := askFields(ask, nil)
	if len(fields) == 0 {
		return nil, nil
	}
	value := func(f field) (json.RawMessage, bool, error) {
		vs := form[f.Name]
		if len(vs) == 0 || vs[0] == "" && f.Kind != "text" {
			return nil, false, nil
		}
		t := vs[0]
		switch f.Kind {
		case "text":
			b, _ := json.Marshal(t)
			return b, true, nil
		case "enum":
			for _, o := range f.Options {
				if o.Value == t {
					return json.RawMessage(t), true, nil
				}
			}
			return nil, false, errors.New(f.Name + ": choose one of the listed values")
		default:
			if !json.Valid([]byte(t)) {
				return nil, false, errors.New(f.Name + ": not a JSON value")
			}
			return json.RawMessage(strings.TrimSpace(t)), true, nil
		}
	}
	if len(fields) == 1 && fields[0].Name == "answer" {
		v, ok, err := value(fields[0])
		if !ok || err != nil {
			return nil, err
		}
		return v, nil
	}
	obj := map[string]json.RawMessage{}
	for _, f := range fields {
		v, ok, err := value(f)
		if err != nil {
			return nil, err
		}
		if ok {
			obj[strings.TrimPrefix(f.Name, "answer.")] = v
		}
	}
	if len(obj) == 0 {
		return nil, nil
	}
	return json.Marshal(obj)
}

// editsOf builds the edits from a submitted form: each editable member
// whose field differs from what the browser submits for it untouched
// (untouched) and from the input (a string member's text taken as
// the string, any other parsed as JSON); nil when none changed.
func editsOf(v review.View, form map[string][]string) (map[string]json.RawMessage, error) {
	var input map[string]json.RawMessage
	_ = json.Unmarshal(v.Input, &input)
	out := map[string]json.RawMessage{}
	for _, name := range v.Editable {
		vs, ok := form["edit."+name]
		if !ok || len(vs) == 0 {
			continue
		}
		orig := input[name]
		var s string
		var nv json.RawMessage
		if len(orig) == 0 || json.Unmarshal(orig, &s) == nil {
			if vs[0] == untouched(s) {
				// The field as the page filled it: no edit, even where
				// the browser could not hold the member's text as it is
				// (a CR, U+0000), nor an absent member added as "".
				continue
			}
			text := vs[0]
			if !strings.Contains(s, "\r") {
				// A textarea submits its line breaks as CRLF (HTML's form
				// submission): the member's own line breaks are kept.
				text = strings.ReplaceAll(text, "\r\n", "\n")
			}
			nv, _ = json.Marshal(text)
		} else {
			if !json.Valid([]byte(vs[0])) {
				return nil, errors.New("edit." + invisible.Escape(name) + ": not a JSON value")
			}
			nv = json.RawMessage(strings.TrimSpace(vs[0]))
		}
		a, _, errA := tool.InputDigest(orig)
		b, _, errB := tool.InputDigest(nv)
		if len(orig) > 0 && errA == nil && errB == nil && bytes.Equal(a, b) {
			continue
		}
		out[name] = nv
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func (s *Server) decideReview(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f := r.PostForm
	decision, digest, reason := f.Get("decision"), f.Get("digest"), f.Get("reason")
	ctx := r.Context()
	reshow := func(status int, refusal string) {
		v, err := s.b.Show(ctx, id)
		if err != nil {
			s.render(w, refusalStatus(err), "refused", refusedPage{Title: "Review " + id, Text: refusalText(err)})
			return
		}
		p := s.reviewPageOf(v, f)
		p.Refusal = refusal
		s.render(w, status, "review", p)
	}
	var verdict review.Verdict
	switch decision {
	case "approve":
		verdict = review.Approve
	case "reject":
		verdict = review.Reject
		if strings.TrimSpace(reason) == "" {
			reshow(http.StatusBadRequest, "a rejection needs a reason: say why in the reason field")
			return
		}
	default:
		reshow(http.StatusBadRequest, "choose approve or reject")
		return
	}
	if !strings.HasPrefix(digest, "sha256:") {
		reshow(http.StatusBadRequest, "the form does not name the input digest it shows; reload the page")
		return
	}
	var answer, edits json.RawMessage
	if verdict == review.Approve && hasPrefixed(f, "answer", "edit.") {
		// The question's schema and the editable members' original values
		// are read again to build the answer and the edits; the digest
		// the decision is bound to stays the one the page showed.
		v, err := s.b.Show(ctx, id)
		if err != nil {
			reshow(refusalStatus(err), refusalText(err))
			return
		}
		if answer, err = answerOf(v.Ask, f); err != nil {
			reshow(http.StatusBadRequest, "the answer: "+err.Error())
			return
		}
		m, err := editsOf(v, f)
		if err != nil {
			reshow(http.StatusBadRequest, err.Error())
			return
		}
		if m != nil {
			edits, _ = json.Marshal(m)
		}
	}
	if _, err := s.b.Decide(ctx, id, verdict, digest, reason, answer, edits); err != nil {
		s.log.Warn("console decision refused", "path", r.URL.Path, "reason", refusalCode(err))
		reshow(refusalStatus(err), decisionRefusalText(err))
		return
	}
	http.Redirect(w, r, "/reviews/"+id, http.StatusSeeOther)
}

func refusalCode(err error) string {
	var ref *Refusal
	if errors.As(err, &ref) {
		return ref.Code
	}
	return "unreachable"
}

func hasPrefixed(f map[string][]string, exact, prefix string) bool {
	for k := range f {
		if k == exact || strings.HasPrefix(k, exact+".") || strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func (s *Server) preview(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, err := s.b.Show(r.Context(), id)
	if err != nil {
		s.render(w, refusalStatus(err), "refused", refusedPage{Title: "Review " + id, Text: refusalText(err)})
		return
	}
	p := s.reviewPageOf(v, r.PostForm)
	if d := r.PostForm.Get("digest"); d != "" && d != v.InputDigest {
		p.Refusal = "the review's input changed since the page showed it: read it again"
	}
	edits, err := editsOf(v, r.PostForm)
	if err != nil {
		p.Refusal = err.Error()
		s.render(w, http.StatusBadRequest, "review", p)
		return
	}
	var input map[string]json.RawMessage
	_ = json.Unmarshal(v.Input, &input)
	names := make([]string, 0, len(edits))
	for k := range edits {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p.Diff = append(p.Diff, diffRow{Member: invisible.Escape(k), Before: jsonText(input[k]), After: jsonText(edits[k])})
		if input == nil {
			input = map[string]json.RawMessage{}
		}
		input[k] = edits[k]
	}
	merged, _ := json.Marshal(input)
	if _, d, err := tool.InputDigest(merged); err == nil {
		p.EditedDigest = d
	}
	s.render(w, http.StatusOK, "review", p)
}

func (s *Server) emailHTML(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Sec-Fetch-Dest") != "iframe" || r.Header.Get("Sec-Fetch-Site") != "same-origin" {
		s.refuse(w, r, http.StatusForbidden, "the HTML part is served to the review page's frame only")
		return
	}
	v, err := s.b.Show(r.Context(), r.PathValue("id"))
	if err != nil {
		s.refuse(w, r, refusalStatus(err), "show refused")
		return
	}
	var in struct {
		HTML *string `json:"html"`
	}
	_ = json.Unmarshal(v.Input, &in)
	body := ""
	if in.HTML != nil {
		body = RewriteEmailHTML(*in.HTML)
	}
	h := w.Header()
	h.Set("Content-Security-Policy", FrameCSP)
	h.Del("X-Frame-Options")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(body))
}

// pointer is a changed JSON Pointer of a park and its class.
type pointer struct{ Pointer, Class string }

type parkPage struct {
	ID, CSRF, Status, Cause, Tool, Step, Seq, Run, Toolset, Starter, Deciders string
	Pinned, Current, Target, Scope, CreatedAt, Deadline, DecidedBy, Reason    string
	Changed                                                                   []pointer
	Waiting, Resumable, Decidable                                             bool
	Outcome, Refusal                                                          string
}

func (s *Server) parkPageOf(v park.View) parkPage {
	p := parkPage{ID: v.ParkID, CSRF: s.csrf("/parks/" + v.ParkID), Status: strings.ToLower(string(v.Status)), Cause: string(v.Cause),
		Tool: v.Tool, Step: v.Step, Seq: v.Seq, Run: v.RunID, Toolset: v.ToolsetID, Starter: v.Starter, Deciders: v.Deciders,
		Pinned: v.PinnedDigest, Current: v.CurrentDigest, Target: invisible.Escape(v.Target), Scope: invisible.Escape(v.Scope),
		CreatedAt: v.CreatedAt, Deadline: v.Deadline, DecidedBy: v.DecidedBy, Reason: invisible.Escape(v.Reason)}
	p.Waiting = v.Status == park.StatusParked && !v.Expired
	p.Decidable = p.Waiting && v.Cause == park.SchemaChanged
	p.Resumable = p.Waiting && v.Cause == park.CredentialsExpired
	if v.Cause == park.SchemaChanged {
		if v.CurrentDigest == "" && v.PinnedDigest != "" {
			p.Changed = []pointer{{"(the server lists the tool no more)", "breaking"}}
		}
		for _, ptr := range v.ChangedPointers {
			c := "breaking"
			if slices.Contains(v.AdditivePointers, ptr) {
				c = "additive"
			}
			if ptr == "" {
				ptr = "(the whole definition)"
			}
			p.Changed = append(p.Changed, pointer{invisible.Escape(ptr), c})
		}
	}
	if !p.Waiting {
		p.Outcome = p.Status
		if v.DecidedBy != "" {
			p.Outcome += " by " + v.DecidedBy
		}
	}
	return p
}

func (s *Server) showPark(w http.ResponseWriter, r *http.Request) {
	v, err := s.b.ParkShow(r.Context(), r.PathValue("id"))
	if err != nil {
		s.render(w, refusalStatus(err), "refused", refusedPage{Title: "Parked call", Text: refusalText(err)})
		return
	}
	s.render(w, http.StatusOK, "park", s.parkPageOf(v))
}

func (s *Server) decidePark(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	decision, reason := r.PostForm.Get("decision"), r.PostForm.Get("reason")
	ctx := r.Context()
	reshow := func(status int, refusal string) {
		v, err := s.b.ParkShow(ctx, id)
		if err != nil {
			s.render(w, refusalStatus(err), "refused", refusedPage{Title: "Parked call", Text: refusalText(err)})
			return
		}
		p := s.parkPageOf(v)
		p.Refusal = refusal
		s.render(w, status, "park", p)
	}
	switch decision {
	case "approve", "resume":
	case "reject":
		if strings.TrimSpace(reason) == "" {
			reshow(http.StatusBadRequest, "a rejection needs a reason: say why in the reason field")
			return
		}
	default:
		reshow(http.StatusBadRequest, "choose approve, reject or resume")
		return
	}
	// The digest the page showed, as a review's decision carries it: a
	// form without it (a page of an older console) is read again.
	digest, ok := r.PostForm["digest"]
	if !ok || len(digest) != 1 {
		reshow(http.StatusBadRequest, "the form does not name the definition digest it shows; reload the page")
		return
	}
	if _, err := s.b.ParkDecide(ctx, id, decision, digest[0], reason); err != nil {
		s.log.Warn("console park decision refused", "path", r.URL.Path, "reason", refusalCode(err))
		reshow(refusalStatus(err), parkRefusalText(err))
		return
	}
	http.Redirect(w, r, "/parks/"+id, http.StatusSeeOther)
}

// expiresIn is the time left until at (RFC 3339) on the server's clock,
// the countdown's text before its script runs (and without script).
func (s *Server) expiresIn(at string) string {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return at
	}
	d := t.Sub(s.now()).Round(time.Second)
	if d <= 0 {
		return "expired"
	}
	return d.String() + " left"
}
