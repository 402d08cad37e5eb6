package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/excerpt"
	"github.com/toolgate/toolgate/shared/invisible"
	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/toolset"
)

// MaxSourceBytes bounds a Solution's source: a compiled definition is at
// most 1 MiB (resolver.MaxDefinitionBytes), and a Function URL request
// body at most 6 MB (Lambda quota).
const MaxSourceBytes = 1 << 20

// Callers verifies caller proofs (shared/caller's Verifier).
type Callers interface {
	Verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error)
}

// Service is the publish function: the only way a Solution reaches Step
// Functions. It verifies who publishes (a caller proof bound to the
// Solution's name and source digest), runs the resolver on the source it
// was sent, checks the Solution's literal URLs and recipients against the
// deployment's allow-lists (Deployment.Check), registers the toolset the
// Solution pins, and creates or updates the state machine and publishes a
// version that records the publisher. A refused Solution gets its
// diagnostics back and changes nothing (docs/infra.md, "Publishing").
type Service struct {
	Callers Callers
	Params  deployment.Params
	Stage   string
	Region  string
	Store   *ledger.Store
	SFN     SFNAPI
	Log     *slog.Logger
	// Deployment holds the tools' allow-lists; the zero Deployment refuses
	// every Solution with a literal URL or recipient.
	Deployment Deployment
	// MCP lists an MCP server's tools for the registration of a draft
	// toolset (RegisterRequest), from this function's network and under
	// the http tool's address rules (shared/mcptool). nil: drafts are
	// refused, as this deployment lists no MCP servers.
	MCP toolset.Lister
	// Floors checks, at registration, each platform tool's pin against its
	// function's owners' floor, read from the function's tags (RuleFloor,
	// checkFloors). nil: not checked at registration; the platform tools'
	// proxy still checks every call.
	Floors Floors
	// Credentials stores and manages the credentials of toolsets' targets
	// (credentials.go); the zero value stores none.
	Credentials Credentials
	// Shapes reads the shapes a toolset's tools learned (ShowShapes); nil:
	// every read answers no shapes.
	Shapes ShapeLister
}

// Request is one publish.
type Request struct {
	// File names the source in diagnostics: a base name such as
	// "weekly-digest.yaml".
	File   string
	Source []byte
	// Proof is the caller proof, bound to caller.ActionPublish, the
	// Solution file's base name and publishapi.SourceDigest(Source).
	Proof string
}

// SolutionInvisibleLogMessage is the "msg" of the warning log line of a
// published Solution whose source holds invisible or bidirectional
// characters (with "file", "lines": the numbers of at most
// resolver.MaxInvisibleLines of them, "line_count" and "code_points";
// never the text).
const SolutionInvisibleLogMessage = "solution has invisible characters"

// Error is a refused or failed publish; Message is safe to show.
type Error struct {
	Code        string
	Message     string
	Diagnostics []string
	Err         error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

var fileName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Publish runs one publish for the caller its proof proves. A source
// holding invisible or bidirectional characters is published with
// publishapi.Result.Warnings naming their lines and code points, and logged once
// (SolutionInvisibleLogMessage), refused or not.
func (s *Service) Publish(ctx context.Context, req Request) (*publishapi.Result, error) {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	switch {
	case !fileName.MatchString(req.File) || filepath.Base(req.File) != req.File:
		return nil, &Error{Code: publishapi.CodeInvalid, Message: "file must be a base name of 1 to 128 letters, digits, '.', '_' or '-'"}
	case len(req.Source) == 0 || len(req.Source) > MaxSourceBytes:
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("the source must be 1 to %d bytes", MaxSourceBytes)}
	case !utf8.Valid(req.Source):
		return nil, &Error{Code: publishapi.CodeInvalid, Message: "the source is not valid UTF-8"}
	}
	who, err := s.verify(ctx, req.Proof, publishapi.Binding(req.File, req.Source))
	if err != nil {
		return nil, err
	}
	kids := &childReader{ctx: ctx, store: s.Store, read: map[string]ledger.Published{}}
	res := resolver.Compile(req.File, req.Source, resolver.Options{Toolsets: s.registered(ctx), ChildRunTimeout: kids.runTimeout})
	if kids.err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the published workflows could not be read; nothing was published", Err: kids.err}
	}
	out := &publishapi.Result{Diagnostics: []string{}, Publisher: who.Principal}
	for _, d := range res.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, d.String())
		if d.Rule == resolver.RuleInvisible {
			out.Warnings = append(out.Warnings, d.String())
		}
	}
	logInvisible(ctx, log, req.File, req.Source)
	if !res.OK() {
		log.InfoContext(ctx, "publish refused", "file", req.File, "publisher", who.Principal, "diagnostics", len(out.Diagnostics))
		return nil, &Error{Code: publishapi.CodeInvalid, Message: "the Solution has errors: nothing was published", Diagnostics: out.Diagnostics}
	}
	if refused := s.Deployment.Check(res); len(refused) > 0 {
		for _, d := range refused {
			out.Diagnostics = append(out.Diagnostics, d.String())
		}
		out.Diagnostics = capDiagnostics(out.Diagnostics)
		log.InfoContext(ctx, "publish refused by the deployment's allow-lists", "file", req.File, "publisher", who.Principal, "diagnostics", len(refused))
		return nil, &Error{Code: publishapi.CodeRefused, Diagnostics: out.Diagnostics,
			Message: fmt.Sprintf("%d literal value(s) of the Solution are not allowed by stage %s's tools: nothing was published", len(refused), s.Stage)}
	}
	if err := s.checkBase(ctx, res.Toolset); err != nil {
		return nil, err
	}
	if _, err := s.Store.RegisterToolset(ctx, res.Toolset); err != nil {
		var refusal *toolset.Refusal
		if errors.As(err, &refusal) {
			return nil, &Error{Code: publishapi.CodeRefused, Message: err.Error(), Diagnostics: out.Diagnostics}
		}
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be registered; nothing was published", Err: err}
	}
	if err := s.markToolset(ctx, res.Toolset); err != nil {
		return nil, err
	}
	children, err := s.children(ctx, res, kids)
	if err != nil {
		return nil, err
	}
	p, err := Publish(ctx, res, s.Params, s.Stage, s.Region, s.SFN, who.Principal, children)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: err.Error(), Diagnostics: out.Diagnostics, Err: err}
	}
	// What a parent that starts this Solution is checked against, and the
	// version it starts. A failure here leaves the version published but
	// not recorded: publishing again publishes the same revision's version
	// and records it.
	if err := s.Store.RecordPublished(ctx, ledger.Published{Solution: res.Solution.Name, VersionARN: p.VersionARN, Version: res.Solution.Version,
		ToolsetID: res.Toolset.ID, OutputBoundBytes: res.Manifest.OutputBoundBytes, InputLimitBytes: res.Manifest.InputLimitBytes,
		RunTimeoutSeconds: res.Solution.RunTimeout, SourceDigest: res.Manifest.SourceDigest, Publisher: who.Principal}); err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the version was published but could not be recorded for parents to start: publish again", Err: err}
	}
	out.StateMachineARN, out.VersionARN, out.Created, out.ToolsetID = p.StateMachineARN, p.VersionARN, p.Created, res.Toolset.ID
	log.InfoContext(ctx, "published", "solution", res.Solution.Name, "version", res.Solution.Version, "toolset_id", res.Toolset.ID,
		"source_digest", res.Manifest.SourceDigest, "publisher", who.Principal, "state_machine_version", p.VersionARN)
	return out, nil
}

// logInvisible writes one warning log line (SolutionInvisibleLogMessage)
// when source holds invisible or bidirectional characters: the lines and
// code points, never the text around them.
func logInvisible(ctx context.Context, log *slog.Logger, file string, source []byte) {
	lines := resolver.InvisibleLines(source)
	if len(lines) == 0 {
		return
	}
	var numbers []int
	var rs []rune
	for i, l := range lines {
		if i < resolver.MaxInvisibleLines {
			numbers = append(numbers, l.Line)
		}
		for _, r := range l.Runes {
			if !slices.Contains(rs, r) {
				rs = append(rs, r)
			}
		}
	}
	slices.Sort(rs)
	log.WarnContext(ctx, SolutionInvisibleLogMessage, "file", file, "lines", numbers, "line_count", len(lines), "code_points", invisible.CodePoints(rs))
}

// FunctionConfig is the publish function's configuration.
type FunctionConfig struct {
	Table, Stage, ParamsFile string
	Callers                  caller.Config
	// Deployment is read by DeploymentFromEnv.
	Deployment Deployment
	// CredentialKey is publishapi.EnvCredentialKey ("": no credentials
	// are stored), and CredentialAdmins the patterns of
	// publishapi.EnvCredentialAdmins (ParseCredentialAdmins).
	CredentialKey    string
	CredentialAdmins []string
	// EndUsers is the end-user mapping (enduser.FromEnv), and
	// EndUserKeyParam the end-user key's parameter (enduser.EnvKeyParam;
	// "": end users' credentials cannot be set).
	EndUsers        enduser.Mapping
	EndUserKeyParam string
}

// FunctionConfigFromEnv reads and checks the publish function's
// configuration: publishapi.EnvTable, publishapi.EnvStage, publishapi.EnvParamsFile, the caller
// verifier's (caller.ConfigFromEnv), the deployment's allow-lists
// (DeploymentFromEnv), and the credentials' key and admins
// (publishapi.EnvCredentialKey, publishapi.EnvCredentialAdmins).
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	cfg := FunctionConfig{Table: getenv(publishapi.EnvTable), Stage: getenv(publishapi.EnvStage), ParamsFile: getenv(publishapi.EnvParamsFile)}
	switch {
	case cfg.Table == "":
		return cfg, fmt.Errorf("%s is not set", publishapi.EnvTable)
	case cfg.Stage == "":
		return cfg, fmt.Errorf("%s is not set", publishapi.EnvStage)
	}
	if err := deployment.CheckStage(cfg.Stage); err != nil {
		return cfg, fmt.Errorf("%s: %w", publishapi.EnvStage, err)
	}
	var err error
	if cfg.Deployment, err = DeploymentFromEnv(getenv); err != nil {
		return cfg, err
	}
	if cfg.Callers, err = caller.ConfigFromEnv(getenv); err != nil {
		return cfg, err
	}
	// The accounts reviewer patterns may name: review-decision admits
	// exactly these (its verifier), so a pattern naming another admits
	// nobody. The publish function's own verifier admits its account only.
	others, err := caller.ReviewerAccountsFromEnv(getenv)
	if err != nil {
		return cfg, err
	}
	cfg.Deployment.Accounts = append([]string{cfg.Callers.Account}, others...)
	cfg.CredentialKey = getenv(publishapi.EnvCredentialKey)
	if cfg.CredentialAdmins, err = ParseCredentialAdmins(getenv(publishapi.EnvCredentialAdmins), cfg.Callers.Account); err != nil {
		return cfg, err
	}
	if cfg.EndUsers, err = enduser.FromEnv(getenv, cfg.Callers.Account); err != nil {
		return cfg, err
	}
	cfg.EndUserKeyParam = getenv(enduser.EnvKeyParam)
	return cfg, nil
}

// RegisterRequest is one toolset registration through the publish function.
type RegisterRequest struct {
	// Toolset is the toolset document: a compiled toolset
	// (*.toolset.json, a lock: toolset.Parse), or a draft, a toolset file
	// naming MCP servers as toolgate writes it (toolset.ParseDraft: an
	// "mcp_servers" member, no id), whose servers are listed here.
	Toolset []byte
	// Proof is bound to caller.ActionRegister and publishapi.SourceDigest(Toolset),
	// and to the toolset's id (publishapi.RegisterBinding) or, for a draft, which has
	// no id yet, to its name (publishapi.RegisterDraftBinding).
	Proof string
}

// InvisibleTextLogMessage is the "msg" of the warning log line of a
// registered tool whose text holds invisible or bidirectional characters
// (with "toolset_id", "tool", "code_points" and "where").
const InvisibleTextLogMessage = "toolset has invisible characters"

// MCPListTimeout bounds the listing of a draft's MCP servers, all of
// them: the publish function's timeout is 30 s (infra), and the table is
// written after.
const MCPListTimeout = 20 * time.Second

// Register registers a toolset for the caller its proof proves, after
// the registration check (ledger.Store.RegisterToolset): the only way
// toolsets reach the table besides a publish, which registers the
// toolset its Solution pins. A toolset sent with its id pins MCP tools
// only when it is derived (toolset.CheckDerived keeps its base's pins):
// otherwise they were pinned by no listing, and it is refused with
// publishapi.CodeRefused. A draft is first resolved: its MCP servers
// are listed (s.MCP) and their admitted tools pinned
// (toolset.ResolveMCP); a server that cannot be listed, that does not
// list an admitted tool, or a pinned tool the registration check refuses
// (a schema that does not compile) refuses the draft with publishapi.CodeRefused,
// naming it, and nothing is registered. A platform tool pinned looser than
// its function's floor (Service.Floors) refuses any toolset with
// publishapi.CodeRefused [toolset-floor] (RuleFloor). A registered toolset whose
// tools' texts hold invisible or bidirectional characters is answered
// with Warnings naming them, each also logged (InvisibleTextLogMessage).
func (s *Service) Register(ctx context.Context, req RegisterRequest) (*publishapi.RegisterResult, error) {
	if len(req.Toolset) == 0 || len(req.Toolset) > MaxSourceBytes {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: fmt.Sprintf("the toolset must be 1 to %d bytes", MaxSourceBytes)}
	}
	if isDraft(req.Toolset) {
		return s.registerDraft(ctx, req)
	}
	ts, err := toolset.Parse(req.Toolset)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: err.Error()}
	}
	if mcp := mcpTools(ts); ts.Base == "" && len(mcp) > 0 {
		// Only a draft's registration lists servers: a pin written by hand
		// would skip the address rules and the listing.
		return nil, &Error{Code: publishapi.CodeRefused, Message: excerpt.Bytes(fmt.Sprintf("toolset %s pins MCP tools (%s) that no listing pinned: register the toolset file that names their server, whose registration lists it; nothing was registered",
			ts.ID, strings.Join(mcp, ", ")), maxDraftMessage, "...")}
	}
	who, err := s.verify(ctx, req.Proof, publishapi.RegisterBinding(ts.ID, req.Toolset))
	if err != nil {
		return nil, err
	}
	return s.register(ctx, ts, who)
}

// mcpTools names ts's MCP tools, sorted, quoted for a message.
func mcpTools(ts *toolset.Toolset) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ts.Tools)) {
		if ts.Tools[name].MCP != nil {
			out = append(out, fmt.Sprintf("%.80q", name)) // the document is not checked yet
		}
	}
	return out
}

// isDraft reports whether doc is a draft: a JSON object with an
// "mcp_servers" member, in that exact name. (toolset.Parse refuses a
// document whose members, in any letter case, name MCP servers.)
func isDraft(doc []byte) bool {
	var probe map[string]json.RawMessage
	return json.Unmarshal(doc, &probe) == nil && probe["mcp_servers"] != nil
}

// registerDraft resolves draft req.Toolset by listing its MCP servers,
// then registers it as Register does.
func (s *Service) registerDraft(ctx context.Context, req RegisterRequest) (*publishapi.RegisterResult, error) {
	draft, err := toolset.ParseDraft(req.Toolset)
	if err != nil {
		return nil, &Error{Code: publishapi.CodeInvalid, Message: draftError(err)}
	}
	who, err := s.verify(ctx, req.Proof, publishapi.RegisterDraftBinding(draft.Name, req.Toolset))
	if err != nil {
		return nil, err
	}
	servers := strings.Join(slices.Sorted(maps.Keys(draft.MCPServers)), ", ")
	if s.MCP == nil {
		return nil, &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("toolset %s names MCP servers (%s), and stage %s lists no MCP servers: this deployment has no MCP client; nothing was registered", draft.Name, servers, s.Stage)}
	}
	lctx, cancel := context.WithTimeout(ctx, MCPListTimeout)
	defer cancel()
	ts, err := draft.ResolveMCP(lctx, s.draftLister(draft))
	if err != nil {
		if s.Log != nil {
			s.Log.InfoContext(ctx, "draft toolset refused", "name", draft.Name, "servers", servers, "publisher", who.Principal, "error", err.Error())
		}
		return nil, &Error{Code: publishapi.CodeRefused, Message: excerpt.Bytes(fmt.Sprintf("toolset %s: %v; nothing was registered", draft.Name, err), maxDraftMessage, "...")}
	}
	if err := ts.Verify(catalog.Default()); err != nil {
		return nil, &Error{Code: publishapi.CodeRefused, Message: excerpt.Bytes(fmt.Sprintf("toolset %s as its servers list it (%s): %v; nothing was registered", draft.Name, ts.ID, err), maxDraftMessage, "...")}
	}
	return s.register(ctx, ts, who)
}

// maxDraftMessage bounds the message of a refused draft, which quotes what
// a server answered.
const maxDraftMessage = 1000

// draftError is a draft's refusal by toolset.ParseDraft, without the
// empty id a *toolset.Refusal names.
func draftError(err error) string {
	var refusal *toolset.Refusal
	if errors.As(err, &refusal) {
		return fmt.Sprintf("draft toolset refused [%s]: %s", refusal.Rule, refusal.Reason)
	}
	return err.Error()
}

// register registers ts (its base checked first, then its http hosts
// against the http function's allow-list, Deployment.CheckHTTPHosts, then
// its platform tools' pins against their functions' floors) for who, and
// answers with its id and body.
func (s *Service) register(ctx context.Context, ts *toolset.Toolset, who caller.Identity) (*publishapi.RegisterResult, error) {
	if err := s.checkBase(ctx, ts); err != nil {
		return nil, err
	}
	if problems := s.Deployment.CheckHTTPHosts(ts.HTTPHosts); len(problems) > 0 {
		return nil, &Error{Code: publishapi.CodeRefused, Message: excerpt.Bytes(fmt.Sprintf("toolset %s is refused [%s]: %s; nothing was registered", ts.ID, RuleDeployment, strings.Join(problems, "; ")), maxDraftMessage, "...")}
	}
	if err := s.checkFloors(ctx, ts); err != nil {
		return nil, err
	}
	created, err := s.Store.RegisterToolset(ctx, ts)
	if err != nil {
		var refusal *toolset.Refusal
		if errors.As(err, &refusal) {
			return nil, &Error{Code: publishapi.CodeRefused, Message: err.Error()}
		}
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be registered", Err: err}
	}
	if err := s.markToolset(ctx, ts); err != nil {
		return nil, err
	}
	body, err := ts.Canonical()
	if err != nil {
		return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the toolset could not be encoded", Err: err}
	}
	res := &publishapi.RegisterResult{ToolsetID: ts.ID, Created: created, Publisher: who.Principal, Body: string(body)}
	for _, f := range ts.InvisibleText() {
		res.Warnings = append(res.Warnings, f.String())
		if s.Log != nil {
			s.Log.WarnContext(ctx, InvisibleTextLogMessage, "toolset_id", ts.ID, "tool", f.Tool,
				"code_points", invisible.CodePoints(f.Runes), "where", strings.Join(f.Where, ", "))
		}
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "toolset registered", "toolset_id", ts.ID, "created", created, "publisher", who.Principal)
	}
	return res, nil
}

// capDiagnostics is list cut to resolver.MaxDiagnostics lines, the last
// counting those left out, so that an answer stays within Lambda's 6 MB
// (resolver.MaxDiagnostics).
func capDiagnostics(list []string) []string {
	if len(list) <= resolver.MaxDiagnostics {
		return list
	}
	n := resolver.MaxDiagnostics - 1
	return append(list[:n:n], fmt.Sprintf("%d more diagnostic(s) are not listed", len(list)-n))
}

// children checks the Solutions a Solution's workflow steps start against
// their last published versions in this stage, and returns each one's
// version ARN by placeholder key (Substitute). A child that is not
// published, whose output bound exceeds a step's output_limit_bytes, or
// whose policy.input_limit_bytes is less than what a step's with may hold,
// refuses the parent (docs/solutions.md, "Workflow steps"). It reads each
// child through kids, so that the version whose run timeout the parent's
// derived run timeout counts is the version it starts.
func (s *Service) children(ctx context.Context, res *resolver.Result, kids *childReader) (map[string]string, error) {
	out := map[string]string{}
	var refused []string
	for _, key := range slices.Sorted(maps.Keys(res.Manifest.Workflows)) {
		pin := res.Manifest.Workflows[key]
		steps := strings.Join(pin.Steps, ", ")
		child, err := kids.published(pin.Solution)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			refused = append(refused, fmt.Sprintf("step %s starts workflow %s, which is not published in stage %s: publish it first", steps, pin.Solution, s.Stage))
			continue
		case err != nil:
			return nil, &Error{Code: publishapi.CodeUnavailable, Message: "the published workflows could not be read; nothing was published", Err: err}
		}
		if child.OutputBoundBytes > pin.OutputLimitBytes {
			refused = append(refused, fmt.Sprintf("step %s starts workflow %s (version %d), whose output may reach %d bytes, over the step's output_limit_bytes %d: raise it or bound %s's output",
				steps, pin.Solution, child.Version, child.OutputBoundBytes, pin.OutputLimitBytes, pin.Solution))
		}
		if pin.InputBoundBytes > child.InputLimitBytes {
			refused = append(refused, fmt.Sprintf("step %s starts workflow %s (version %d) with an input that may reach %d bytes, over its policy.input_limit_bytes %d",
				steps, pin.Solution, child.Version, pin.InputBoundBytes, child.InputLimitBytes))
		}
		out[key] = child.VersionARN
	}
	if len(refused) > 0 {
		return nil, &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("%d workflow step(s) cannot start their Solution: nothing was published", len(refused)), Diagnostics: refused}
	}
	return out, nil
}

// childReader reads the published records of the Solutions a Solution's
// workflow steps start, each once per publish: the resolver's
// ChildRunTimeout and children see the same version.
type childReader struct {
	ctx   context.Context
	store *ledger.Store
	read  map[string]ledger.Published
	// err is the first read that failed other than ErrNotFound: publish
	// then answers unavailable, whatever the resolver made of it.
	err error
}

// published is the last published version of Solution name, or an error
// wrapping ledger.ErrNotFound.
func (k *childReader) published(name string) (ledger.Published, error) {
	if p, ok := k.read[name]; ok {
		return p, nil
	}
	p, err := k.store.PublishedSolution(k.ctx, name)
	if err != nil {
		if !errors.Is(err, ledger.ErrNotFound) && k.err == nil {
			k.err = err
		}
		return p, err
	}
	k.read[name] = p
	return p, nil
}

// runTimeout is the resolver's ChildRunTimeout: the run timeout of
// Solution name's published version. A child not published counts 0 s
// (children refuses the parent, naming it); a version recorded before run
// timeouts were is refused, to be published again.
func (k *childReader) runTimeout(name string) (int, error) {
	p, err := k.published(name)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, errors.New("the published workflows could not be read")
	case p.RunTimeoutSeconds <= 0:
		return 0, fmt.Errorf("its version %d was published before run timeouts were recorded: publish %s again", p.Version, name)
	}
	return p.RunTimeoutSeconds, nil
}

// registered is the resolver's lookup of a toolset a Solution names: the
// registered item, loaded with its registration check (ledger.Store.Toolset).
func (s *Service) registered(ctx context.Context) func(id string) (*toolset.Toolset, error) {
	return func(id string) (*toolset.Toolset, error) {
		ts, err := s.Store.Toolset(ctx, id)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, fmt.Errorf("it is not registered in stage %s: %w", s.Stage, resolver.ErrToolsetNotFound)
		}
		return ts, err
	}
}

// checkBase refuses a derived toolset whose base is not registered, or
// that is not its base's tools with policies no weaker
// (toolset.CheckDerived).
func (s *Service) checkBase(ctx context.Context, ts *toolset.Toolset) error {
	if ts.Base == "" {
		return nil
	}
	base, err := s.Store.Toolset(ctx, ts.Base)
	if errors.Is(err, ledger.ErrNotFound) {
		return &Error{Code: publishapi.CodeRefused, Message: fmt.Sprintf("toolset %s: its base %s is not registered", ts.ID, ts.Base)}
	}
	if err != nil {
		return &Error{Code: publishapi.CodeUnavailable, Message: "the base toolset could not be read", Err: err}
	}
	if err := ts.CheckDerived(base); err != nil {
		return &Error{Code: publishapi.CodeRefused, Message: err.Error()}
	}
	return nil
}

// verify checks a caller proof and maps its refusal to the function's
// codes.
func (s *Service) verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error) {
	if s.Callers == nil {
		return caller.Identity{}, &Error{Code: publishapi.CodeUnauthenticated, Message: "this function has no caller verifier"}
	}
	who, err := s.Callers.Verify(ctx, proof, b)
	if err != nil {
		msg, unavailable := caller.Explain(err)
		if unavailable {
			return who, &Error{Code: publishapi.CodeUnavailable, Message: msg, Err: err}
		}
		return who, &Error{Code: publishapi.CodeUnauthenticated, Message: msg}
	}
	return who, nil
}
