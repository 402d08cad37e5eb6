package publish_test

// Both sides of every literal rule: for the same inputs, what
// `toolgate check` (resolver.Compile) and the publish function
// (Deployment.Check) refuse must be exactly what the tool refuses at run
// time, given the same deployment lists. Check refuses what the tool
// refuses whatever the deployment (TOOL_INPUT_INVALID for send-email, the
// URL's syntax and fetch_hosts for structured-data-fetch); publish refuses
// what this deployment's lists refuse; a literal both pass is one the tool
// accepts.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/toolgate/toolgate/functions/publish/publish"
	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/fetch"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/sendemail"
	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolcall"
)

// Where a literal is refused.
const (
	atCheck   = "check"   // by toolgate check, whatever the deployment
	atPublish = "publish" // by the publish function, for this deployment
	nowhere   = ""        // the tool accepts it
)

// compile runs the resolver on a Solution given as data (JSON, so that any
// string, control characters included, is written exactly).
func compile(t testing.TB, sol map[string]any) *resolver.Result {
	t.Helper()
	src, err := json.Marshal(sol)
	if err != nil {
		t.Fatal(err)
	}
	return resolver.Compile("literals.json", src, resolver.Options{})
}

// stage says where res and dep refuse: check (with the refusing rules),
// publish, or nowhere.
func stage(t testing.TB, res *resolver.Result, dep publish.Deployment) (string, []string) {
	t.Helper()
	if !res.OK() {
		var rules []string
		for _, d := range res.Diagnostics {
			if d.Severity == resolver.SeverityError {
				rules = append(rules, d.String())
			}
		}
		return atCheck, rules
	}
	if ds := dep.Check(res); len(ds) > 0 {
		var msgs []string
		for _, d := range ds {
			msgs = append(msgs, d.String())
		}
		return atPublish, msgs
	}
	return nowhere, nil
}

// sesStub accepts every message.
type sesStub struct{ sent int }

func (s *sesStub) SendEmail(context.Context, *sesv2.SendEmailInput, ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	s.sent++
	return &sesv2.SendEmailOutput{MessageId: aws.String("m-1")}, nil
}

// mailRun is the send-email tool's verdict on one input: nowhere when it
// sends, else where its refusal belongs (TOOL_INPUT_INVALID: check;
// TOOL_PERMISSION_DENIED: publish, the allow-list's).
func mailRun(t testing.TB, cfg sendemail.Config, input map[string]any) (string, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ses := &sesStub{}
	_, err = sendemail.Tool(cfg, ses)(context.Background(), &toolcall.Call{Input: raw})
	var te *tool.Error
	switch {
	case err == nil && ses.sent == 1:
		return nowhere, nil
	case errors.As(err, &te) && te.Code == tool.InputInvalid && ses.sent == 0:
		return atCheck, err
	case errors.As(err, &te) && te.Code == tool.PermissionDenied && ses.sent == 0:
		return atPublish, err
	}
	t.Fatalf("send-email: %v (sent %d)", err, ses.sent)
	return "", nil
}

// mailSolution has one reviewed send-email step with input with.
func mailSolution(with map[string]any) map[string]any {
	return map[string]any{"solution": "literals", "version": 1, "steps": []any{
		map[string]any{"id": "approve", "review": map[string]any{"of": "send"}, "on_approve": "send"},
		map[string]any{"id": "send", "tool": "send-email", "with": with},
	}}
}

// mailLists is the deployment of the mail tables: what the publish function
// reads and what send-email reads, from the same variable's value.
const mailLists = "@example.com, @xn--bcher-kva.example, ops@internal.example"

func mailDeployment(t testing.TB) (publish.Deployment, sendemail.Config) {
	t.Helper()
	dep, err := publish.DeploymentFromEnv(func(k string) string {
		return map[string]string{publish.EnvRecipientAllow: mailLists}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sendemail.ConfigFromEnv(func(k string) string {
		return map[string]string{sendemail.EnvSender: "noreply@example.com", sendemail.EnvRecipientAllow: mailLists}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	return dep, cfg
}

// TestRecipientLiteralsBothSides: the report's recipients and variants of
// each kind, in to, cc, bcc and reply_to.
func TestRecipientLiteralsBothSides(t *testing.T) {
	dep, cfg := mailDeployment(t)
	tests := []struct {
		name, addr, want string
	}{
		{"report: quoted local part hiding a domain", `"a@b.example x"@internal.example`, atCheck},
		{"report: display name", "Alice <alice@example.com>", atCheck},
		{"quoted display name", `"Alice" <alice@example.com>`, atCheck},
		{"angle brackets only", "<alice@example.com>", atCheck},
		{"display name without space", "Alice<alice@example.com>", atCheck},
		{"quoted local part with a space", `"a b"@example.com`, atCheck},
		{"quoted local part", `"alice"@example.com`, atCheck},
		{"quoted-pair", `a\ b@example.com`, atCheck},
		{"comment before", "(x)alice@example.com", atCheck},
		{"comment inside", "alice(x)@example.com", atCheck},
		{"comment after", "alice@example.com (Alice)", atCheck},
		{"comment in the domain", "alice@(x)example.com", atCheck},
		{"group", "team: a@example.com, b@example.com;", atCheck},
		{"empty group", "undisclosed-recipients:;", atCheck},
		{"address list", "a@example.com, b@example.com", atCheck},
		{"two at signs", "a@b@example.com", atCheck},
		{"trailing dot in the domain", "alice@example.com.", atCheck},
		{"trailing dot in the local part", "alice.@example.com", atCheck},
		{"leading dot", ".alice@example.com", atCheck},
		{"two dots", "al..ice@example.com", atCheck},
		{"CRLF", "a@example.com\r\nBcc: x@example.net", atCheck},
		{"LF", "a@example.com\nBcc: x@example.net", atCheck},
		{"NEL", "a@example.com\u0085", atCheck},
		{"leading space", " alice@example.com", atCheck},
		{"trailing space", "alice@example.com ", atCheck},
		{"tab", "alice@example.com\t", atCheck},
		{"zero-width space", "al\u200bice@example.com", atCheck},
		{"domain literal", "alice@[192.0.2.1]", atCheck},
		{"one-label domain", "alice@localhost", atCheck},
		{"special-use domain", "alice@a.test", atCheck},
		{"numeric top label", "alice@192.0.2.1", atCheck},
		{"IDN in upper case", "alice@BÜCHER.example", atCheck},
		{"IDN full-width", "alice@ｅxample.com", atCheck},
		{"IDN ideographic full stop", "alice@bücher。example", atCheck},
		{"bad A-label", "alice@xn--zz.example", atCheck},
		{"non-ASCII local part", "ålice@example.com", atCheck},
		{"encoded-word", "=?utf-8?q?a?=@example.com", atCheck},
		{"local part over 64", strings.Repeat("a", 65) + "@example.com", atCheck},
		{"plain", "alice@example.com", nowhere},
		{"case", "Alice@Example.COM", nowhere},
		{"atext", "user+tag/dept=x@example.com", nowhere},
		{"IDN U-label", "alice@bücher.example", nowhere},
		{"IDN A-label", "alice@xn--bcher-kva.example", nowhere},
		{"address entry", "OPS@internal.example", nowhere},
		{"not on the list", "bob@other.example", atPublish},
		{"subdomain of a listed domain", "alice@mail.example.com", atPublish},
		{"other mailbox of an address entry", "dev@internal.example", atPublish},
		{"IDN not on the list", "alice@bücher.example.org", atPublish},
	}
	for _, tt := range tests {
		for _, field := range []string{"to", "cc", "bcc", "reply_to"} {
			t.Run(tt.name+"/"+field, func(t *testing.T) {
				with := map[string]any{"subject": "s", "text": "t"}
				if field != "to" {
					with["to"] = []any{"team@example.com"}
				}
				with[field] = []any{tt.addr}
				got, why := stage(t, compile(t, mailSolution(with)), dep)
				run, err := mailRun(t, cfg, with)
				if got != tt.want || run != tt.want {
					t.Fatalf("%q in %s: refused at %q (%v), send-email at %q (%v); want %q for both", tt.addr, field, got, why, run, err, tt.want)
				}
				if got == atCheck && !strings.Contains(strings.Join(why, "\n"), `[recipient] step "send" with.`+field+"[0]: ") {
					t.Fatalf("diagnostics %q do not name the step, the field and the rule", why)
				}
				if got == atPublish && !strings.Contains(why[0], `literals.json:`) || got == atPublish && !strings.Contains(why[0], `[deployment] step "send" with.`+field+`[0]: recipient`) {
					t.Fatalf("publish diagnostics %q", why)
				}
			})
		}
	}
}

// TestRecipientCountBothSides: to, cc and bcc together hold at most 50
// recipients; reply_to does not count.
func TestRecipientCountBothSides(t *testing.T) {
	dep, cfg := mailDeployment(t)
	list := func(prefix string, n int) []any {
		var l []any
		for i := range n {
			l = append(l, prefix+strings.Repeat("x", i+1)+"@example.com")
		}
		return l
	}
	for _, tt := range []struct {
		name       string
		to, cc, bc int
		want       string
	}{
		{"50 in to", 50, 0, 0, nowhere},
		{"30 and 20", 30, 20, 0, nowhere},
		{"30, 20 and 1", 30, 20, 1, atCheck},
		{"20, 20 and 11", 20, 20, 11, atCheck},
	} {
		t.Run(tt.name, func(t *testing.T) {
			with := map[string]any{"to": list("t", tt.to), "subject": "s", "text": "t", "reply_to": list("r", 50)}
			if tt.cc > 0 {
				with["cc"] = list("c", tt.cc)
			}
			if tt.bc > 0 {
				with["bcc"] = list("b", tt.bc)
			}
			got, why := stage(t, compile(t, mailSolution(with)), dep)
			run, err := mailRun(t, cfg, with)
			if got != tt.want || run != tt.want {
				t.Fatalf("refused at %q (%v), send-email at %q (%v); want %q", got, why, run, err, tt.want)
			}
		})
	}
}

// TestSubjectLiteralsBothSides: line breaks and controls in literal
// subjects, and in the literal text of a subject template (whose binding is
// given the value bound).
func TestSubjectLiteralsBothSides(t *testing.T) {
	dep, cfg := mailDeployment(t)
	tests := []struct {
		name, subject, bound, want string
	}{
		{"report: CRLF header injection", "Hi\r\nBcc: someone@example.net", "", atCheck},
		{"CR", "Hi\rthere", "", atCheck},
		{"LF", "Hi\nthere", "", atCheck},
		{"CRLF at the end", "Hi\r\n", "", atCheck},
		{"LF at the start", "\nHi", "", atCheck},
		{"NEL", "Hi\u0085Bcc: someone@example.net", "", atCheck},
		{"LINE SEPARATOR", "Hi\u2028there", "", atCheck},
		{"PARAGRAPH SEPARATOR", "Hi\u2029there", "", atCheck},
		{"NUL", "Hi\x00", "", atCheck},
		{"ESC", "Hi\x1b[31m", "", atCheck},
		{"vertical tab", "Hi\vthere", "", atCheck},
		{"form feed", "Hi\fthere", "", atCheck},
		{"DEL", "Hi\x7f", "", atCheck},
		{"C1", "Hi\u0090", "", atCheck},
		{"template with CRLF", "Hi ${input.name}\r\nBcc: someone@example.net", "Bob", atCheck},
		{"template with NEL", "${input.name}\u0085", "Bob", atCheck},
		{"escaped dollar and LF", "$${x}\n", "", atCheck},
		{"TAB", "Hi\tthere", "", nowhere},
		{"non-ASCII", "Grüße 📬 日本語", "", nowhere},
		{"U+2027", "a\u2027b", "", nowhere},
		{"NBSP", "a\u00a0b", "", nowhere},
		{"spaces around", " Hi ", "", nowhere},
		{"escaped dollar", "cost: $${ a", "", nowhere},
		{"template", "Hi ${input.name}", "Bob", nowhere},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			with := map[string]any{"to": []any{"team@example.com"}, "subject": tt.subject, "text": "t"}
			got, why := stage(t, compile(t, mailSolution(with)), dep)
			// The tool receives the subject with the binding's value and
			// "$${" read as "${".
			sent := strings.ReplaceAll(strings.ReplaceAll(tt.subject, "${input.name}", tt.bound), "$${", "${")
			run, err := mailRun(t, cfg, map[string]any{"to": []any{"team@example.com"}, "subject": sent, "text": "t"})
			if got != tt.want || run != tt.want {
				t.Fatalf("%q: refused at %q (%v), send-email at %q (%v); want %q", tt.subject, got, why, run, err, tt.want)
			}
			if got == atCheck && !strings.Contains(strings.Join(why, "\n"), `[mail-header] step "send" with.subject`) {
				t.Fatalf("diagnostics %q do not name the step, the field and the rule", why)
			}
		})
	}
}

// anyName answers every look-up with one public address: the tables test
// what is decided without DNS, so a name is always "resolvable".
type anyName struct{}

func (anyName) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

// fetchHosts is the Solution's policy.fetch_hosts in the fetch table, and
// the platform's list unless a row names another.
var fetchHosts = []string{"api.example.com", "api.example.com:8443", "*.data.example.org", "8.8.8.8",
	"[2001:4860:4860::8888]", "127.0.0.1", "169.254.169.254", "10.0.0.1"}

// TestFetchURLLiteralsBothSides: the report's URL and variants of each kind.
// A row with bound set writes url as a template of ${input.p}, which the
// tool receives as bound.
func TestFetchURLLiteralsBothSides(t *testing.T) {
	tests := []struct {
		name, url, bound string
		platform         []string // nil: fetchHosts
		exempt           []string
		want             string
	}{
		{"report: trailing space", "https://api.example.com/items ", "", nil, nil, atCheck},
		{"leading space", " https://api.example.com/items", "", nil, nil, atCheck},
		{"trailing tab", "https://api.example.com/items\t", "", nil, nil, atCheck},
		{"tab inside", "https://api.example.com/it\tems", "", nil, nil, atCheck},
		{"newline", "https://api.example.com/items\n", "", nil, nil, atCheck},
		{"CR in the host", "https://api.exa\rmple.com/", "", nil, nil, atCheck},
		{"NBSP", "https://api.example.com/\u00a0", "", nil, nil, atCheck},
		{"zero-width space in the host", "https://api.exa\u200bmple.com/", "", nil, nil, atCheck},
		{"userinfo", "https://user:secret@api.example.com/items", "", nil, nil, atCheck},
		{"empty userinfo", "https://@api.example.com/", "", nil, nil, atCheck},
		{"userinfo hiding the host", "https://api.example.com@evil.example.net/", "", nil, nil, atCheck},
		{"backslash", `https://api.example.com\@evil.example.net/`, "", nil, nil, atCheck},
		{"fragment with @", "https://evil.example.net#@api.example.com/", "", nil, nil, atCheck},
		{"second fragment", "https://api.example.com/#a#b", "", nil, nil, atCheck},
		{"ftp", "ftp://api.example.com/file", "", nil, nil, atCheck},
		{"javascript", "javascript:alert(1)", "", nil, nil, atCheck},
		{"no slashes", "https:api.example.com/items", "", nil, nil, atCheck},
		{"dot segment", "https://api.example.com/a/../admin", "", nil, nil, atCheck},
		{"encoded dot segment", "https://api.example.com/a/%2e%2e/admin", "", nil, nil, atCheck},
		{"quote in the query", "https://api.example.com/?q='x'", "", nil, nil, atCheck},
		{"non-ASCII path", "https://api.example.com/ü", "", nil, nil, atCheck},
		{"percent-encoded host", "https://%61pi.example.com/", "", nil, nil, atCheck},
		{"port leading zero", "https://api.example.com:08443/", "", nil, nil, atCheck},
		{"port 0", "https://api.example.com:0/", "", nil, nil, atCheck},
		{"port over 65535", "https://api.example.com:65536/", "", nil, nil, atCheck},
		{"port not listed", "https://api.example.com:9443/", "", nil, nil, atCheck},
		{"http on a listed host", "http://api.example.com/", "", nil, nil, nowhere},
		{"host not listed", "https://evil.example.net/", "", nil, nil, atCheck},
		{"short IPv4", "http://8.8.2056/", "", nil, nil, atCheck},
		{"octal IPv4", "http://010.8.8.8/", "", nil, nil, atCheck},
		{"IPv4 in brackets", "http://[8.8.8.8]/", "", nil, nil, atCheck},
		{"zone", "http://[fe80::1%25eth0]/", "", nil, nil, atCheck},
		{"mapped IPv6 not listed", "http://[::ffff:8.8.8.8]/", "", nil, nil, atCheck},
		{"IDN upper case", "https://BÜCHER.data.example.org/", "", nil, nil, atCheck},
		{"wildcard apex", "https://data.example.org/", "", nil, nil, atCheck},
		{"template: trailing space", "https://api.example.com/${input.p} ", "items", nil, nil, atCheck},
		{"template: tab", "https://api.example.com/${input.p}\t", "items", nil, nil, atCheck},
		{"template: userinfo", "https://u@api.example.com/${input.p}", "items", nil, nil, atCheck},
		{"template: host not listed", "https://evil.example.net/${input.p}", "items", nil, nil, atCheck},
		{"fragment", "https://api.example.com/items#top", "", nil, nil, nowhere},
		{"upper case", "HTTPS://API.Example.COM/items", "", nil, nil, nowhere},
		{"trailing dot", "https://api.example.com./items", "", nil, nil, nowhere},
		{"listed port", "https://api.example.com:8443/items", "", nil, nil, nowhere},
		{"default port written", "https://api.example.com:443/items", "", nil, nil, nowhere},
		{"query and escapes", "https://api.example.com/a%20b?x=1&y=%2F", "", nil, nil, nowhere},
		{"wildcard", "https://a.b.data.example.org/x", "", nil, nil, nowhere},
		{"IDN", "https://bücher.data.example.org/", "", nil, nil, nowhere},
		{"IPv4", "http://8.8.8.8/", "", nil, nil, nowhere},
		{"IPv6", "https://[2001:4860:4860::8888]/dns-query", "", nil, nil, nowhere},
		{"template", "https://api.example.com/${input.p}", "items", nil, nil, nowhere},
		{"template host", "https://${input.p}/x", "api.example.com", nil, nil, nowhere},
		{"not on the platform list", "https://api.example.com/items", "", []string{"other.example.com"}, nil, atPublish},
		{"only another port on the platform list", "https://api.example.com:8443/items", "", []string{"api.example.com"}, nil, atPublish},
		{"platform wildcard", "https://a.data.example.org/", "", []string{"*.example.org"}, nil, nowhere},
		{"empty platform list", "https://api.example.com/items", "", []string{}, nil, atPublish},
		{"template: not on the platform list", "https://api.example.com/${input.p}", "items", []string{"other.example.com"}, nil, atPublish},
		{"loopback", "http://127.0.0.1/", "", nil, nil, atPublish},
		{"loopback exempted", "http://127.0.0.1/", "", nil, []string{"127.0.0.1/32"}, nowhere},
		{"private", "http://10.0.0.1/", "", nil, nil, atPublish},
		{"private exempted", "http://10.0.0.1/", "", nil, []string{"10.0.0.0/8"}, nowhere},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "", nil, nil, atPublish},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			platform := tt.platform
			if platform == nil {
				platform = fetchHosts
			}
			env := map[string]string{
				publish.EnvFetchAllow:          strings.Join(platform, ","),
				publish.EnvFetchAllowAddresses: strings.Join(tt.exempt, ","),
				publish.EnvRecipientAllow:      "@example.com",
			}
			dep, err := publish.DeploymentFromEnv(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			sol := map[string]any{"solution": "literals", "version": 1,
				"policy": map[string]any{"fetch_hosts": fetchHosts},
				"steps":  []any{map[string]any{"id": "fetch", "tool": "structured-data-fetch", "with": map[string]any{"url": tt.url}}}}
			got, why := stage(t, compile(t, sol), dep)

			cfg, err := fetch.ConfigFromEnv(func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			cfg.Resolver = anyName{}
			pinned, err := hostlist.ParseList(fetchHosts)
			if err != nil {
				t.Fatal(err)
			}
			sent := strings.ReplaceAll(tt.url, "${input.p}", tt.bound)
			d := cfg.Decide(context.Background(), sent, pinned)
			if d.Allow != (tt.want == nowhere) || got != tt.want {
				t.Fatalf("%q: refused at %q (%v); structured-data-fetch allows %v (%s); want refused at %q", tt.url, got, why, d.Allow, d.Reason, tt.want)
			}
			// A refusal check knows of needs no deployment: the tool refuses it
			// with a platform list that allows everything the Solution's does.
			if got == atCheck {
				open := cfg
				open.Allow, open.AllowAddresses = pinned, nil
				if d := open.Decide(context.Background(), sent, pinned); d.Allow {
					t.Fatalf("%q: check refuses (%v) what the tool allows under any platform list", tt.url, why)
				}
				if all := strings.Join(why, "\n"); !strings.Contains(all, `step "fetch" with.url`) ||
					!strings.Contains(all, "[fetch-url]") && !strings.Contains(all, "[fetch-host]") {
					t.Fatalf("diagnostics %q do not name the step, the field and the rule", why)
				}
			}
			if got == atPublish && !strings.Contains(why[0], `[deployment] step "fetch" with.url: `) {
				t.Fatalf("publish diagnostics %q", why)
			}
		})
	}
}

// refusedCaller is a publisher whose proof verifies.
type refusedCaller struct{}

func (refusedCaller) Verify(context.Context, string, caller.Binding) (caller.Identity, error) {
	return caller.Identity{ARN: "arn:aws:iam::123456789012:role/p", Principal: "arn:aws:iam::123456789012:role/p"}, nil
}

// TestPublishRefusesLiteralsTheDeploymentRefuses: the publish function
// answers PUBLISH_REFUSED with one diagnostic per literal, naming the
// file, line, column, step and field, before it registers or writes
// anything (the Service has no store or Step Functions client here: a
// call to either would panic).
func TestPublishRefusesLiteralsTheDeploymentRefuses(t *testing.T) {
	src := []byte(`solution: lists
version: 1
policy:
  fetch_hosts: [api.example.com]
steps:
  - id: fetch
    tool: structured-data-fetch
    with: {url: "https://api.example.com/items"}
    next: approve
  - id: approve
    review: {of: send}
    on_approve: send
  - id: send
    tool: send-email
    with: {to: [team@example.com, bob@other.example], subject: s, text: t}
`)
	env := map[string]string{publish.EnvFetchAllow: "status.example.com", publish.EnvRecipientAllow: "@example.com"}
	dep, err := publish.DeploymentFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	svc := &publish.Service{Callers: refusedCaller{}, Stage: "dev", Deployment: dep, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err = svc.Publish(context.Background(), publish.Request{File: "lists.yaml", Source: src, Proof: "p"})
	var pe *publish.Error
	if !errors.As(err, &pe) || pe.Code != publishapi.CodeRefused {
		t.Fatalf("publish: %v, want %s", err, publishapi.CodeRefused)
	}
	want := []string{
		`lists.yaml:8:17: error: [deployment] step "fetch" with.url: host api.example.com is not on the platform allow-list; structured-data-fetch would refuse every run of this step (TOOL_PERMISSION_DENIED)`,
		`lists.yaml:15:35: error: [deployment] step "send" with.to[1]: recipient "bob@other.example" is not on this deployment's recipient allow-list (TOOLGATE_RECIPIENT_ALLOW; default deny, and an "@domain" entry matches that exact domain only); send-email would refuse every run of this step (TOOL_PERMISSION_DENIED)`,
	}
	if strings.Join(pe.Diagnostics, "\n") != strings.Join(want, "\n") {
		t.Fatalf("diagnostics:\n%s\nwant:\n%s", strings.Join(pe.Diagnostics, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(pe.Message, "nothing was published") {
		t.Fatalf("message %q", pe.Message)
	}
	// The zero Deployment refuses every literal.
	svc.Deployment = publish.Deployment{}
	if _, err := svc.Publish(context.Background(), publish.Request{File: "lists.yaml", Source: src, Proof: "p"}); !errors.As(err, &pe) || len(pe.Diagnostics) != 3 {
		t.Fatalf("zero Deployment: %v", err)
	}
}

// TestDeploymentFromEnv: the publish function reads the tools' variables
// with the tools' parsers, and stops at cold start on what would stop them.
func TestDeploymentFromEnv(t *testing.T) {
	if publish.EnvFetchAllow != fetch.EnvAllow || publish.EnvFetchAllowAddresses != fetch.EnvAllowAddresses || publish.EnvRecipientAllow != sendemail.EnvRecipientAllow {
		t.Fatal("the publish function's variables are not the tools'")
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		err  string
	}{
		{"recipients unset", map[string]string{}, publish.EnvRecipientAllow + " is not set"},
		{"bad recipient entry", map[string]string{publish.EnvRecipientAllow: "Alice <a@example.com>"}, "display name"},
		{"stray comma", map[string]string{publish.EnvRecipientAllow: "@example.com,"}, "entry 1 is empty"},
		{"bad host entry", map[string]string{publish.EnvRecipientAllow: "@example.com", publish.EnvFetchAllow: "*.co.uk"}, "public suffix"},
		{"metadata exemption", map[string]string{publish.EnvRecipientAllow: "@example.com", publish.EnvFetchAllowAddresses: "169.254.0.0/16"}, "never exempted"},
		{"bad http host entry", map[string]string{publish.EnvRecipientAllow: "@example.com", publish.EnvHTTPAllow: "*.co.uk"}, publish.EnvHTTPAllow},
		{"http metadata exemption", map[string]string{publish.EnvRecipientAllow: "@example.com", publish.EnvHTTPAllowAddresses: "169.254.169.254"}, "never exempted"},
		{"fine", map[string]string{publish.EnvRecipientAllow: "@example.com", publish.EnvFetchAllow: "api.example.com", publish.EnvFetchAllowAddresses: "127.0.0.1/32"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := publish.DeploymentFromEnv(func(k string) string { return tt.env[k] })
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}
}

// FuzzLiteralsBothSides: for any string written as a literal recipient
// (kind 0), subject (1) or fetch URL (2), check and publish refuse it
// exactly when the tool does, under the tables' deployments.
func FuzzLiteralsBothSides(f *testing.F) {
	for _, s := range []string{`"a@b.example x"@internal.example`, "Alice <alice@example.com>", "alice@bücher.example", "bob@other.example", "a@example.com\r\n"} {
		f.Add(uint8(0), s)
	}
	for _, s := range []string{"Hi\r\nBcc: someone@example.net", "Hi\u0085", "Hi\tthere", "s"} {
		f.Add(uint8(1), s)
	}
	for _, s := range []string{"https://api.example.com/items ", "http://127.0.0.1/", "https://api.example.com:8443/x#f", "https://u@api.example.com/"} {
		f.Add(uint8(2), s)
	}
	mailDep, mailCfg := mailDeployment(f)
	env := map[string]string{publish.EnvFetchAllow: strings.Join(fetchHosts, ","), publish.EnvRecipientAllow: "@example.com"}
	fetchDep, err := publish.DeploymentFromEnv(func(k string) string { return env[k] })
	if err != nil {
		f.Fatal(err)
	}
	fetchCfg, err := fetch.ConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		f.Fatal(err)
	}
	fetchCfg.Resolver = anyName{}
	pinned, err := hostlist.ParseList(fetchHosts)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, s string) {
		// Only literals: no binding, and text JSON carries unchanged. The
		// input schema's bounds are checked on both sides alike (the
		// dispatcher validates with it at run time).
		if strings.Contains(s, "${") || !utf8.ValidString(s) || s == "" {
			return
		}
		var got, run string
		var why []string
		var detail any
		switch kind % 3 {
		case 0:
			with := map[string]any{"to": []any{s}, "subject": "s", "text": "t"}
			got, why = stage(t, compile(t, mailSolution(with)), mailDep)
			run, detail = mailRun(t, mailCfg, with)
		case 1:
			if utf8.RuneCountInString(s) > 998 {
				return
			}
			with := map[string]any{"to": []any{"team@example.com"}, "subject": s, "text": "t"}
			got, why = stage(t, compile(t, mailSolution(with)), mailDep)
			run, detail = mailRun(t, mailCfg, with)
		case 2:
			if len(s) > 8192 {
				return
			}
			sol := map[string]any{"solution": "literals", "version": 1, "policy": map[string]any{"fetch_hosts": fetchHosts},
				"steps": []any{map[string]any{"id": "fetch", "tool": "structured-data-fetch", "with": map[string]any{"url": s}}}}
			got, why = stage(t, compile(t, sol), fetchDep)
			d := fetchCfg.Decide(context.Background(), s, pinned)
			run, detail = nowhere, d.Reason
			if !d.Allow {
				run = got // which stage refuses is the table tests' to check
				if got == nowhere {
					run = "refused"
				}
			}
		}
		if got != run {
			t.Fatalf("kind %d %q: refused at %q (%v); the tool: %q (%v)", kind%3, s, got, why, run, detail)
		}
	})
}
