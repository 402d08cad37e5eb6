package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/ledger"
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
	Params  Params
	Stage   string
	Region  string
	Store   *ledger.Store
	SFN     SFNAPI
	Log     *slog.Logger
	// Deployment holds the tools' allow-lists; the zero Deployment refuses
	// every Solution with a literal URL or recipient.
	Deployment Deployment
}

// Request is one publish.
type Request struct {
	// File names the source in diagnostics: a base name such as
	// "weekly-digest.yaml".
	File   string
	Source []byte
	// Proof is the caller proof, bound to caller.ActionPublish, the
	// Solution file's base name and SourceDigest(Source).
	Proof string
}

// Result is a publish's answer.
type Result struct {
	Diagnostics     []string `json:"diagnostics"`
	StateMachineARN string   `json:"state_machine_arn,omitempty"`
	VersionARN      string   `json:"version_arn,omitempty"`
	Created         bool     `json:"created,omitempty"`
	ToolsetID       string   `json:"toolset_id,omitempty"`
	Publisher       string   `json:"publisher,omitempty"`
}

// Error codes of the publish function (the Lambda errorType of a direct
// invocation, the "code" of a Function URL error body).
const (
	CodeInvalid         = "PUBLISH_INVALID"         // a malformed request, or a Solution the resolver refuses (with diagnostics)
	CodeUnauthenticated = "PUBLISH_UNAUTHENTICATED" // no valid caller proof
	CodeRefused         = "PUBLISH_REFUSED"         // the toolset is refused by the registration check, or a literal value by the deployment's allow-lists (with diagnostics)
	CodeUnavailable     = "PUBLISH_UNAVAILABLE"     // DynamoDB, SSM, Step Functions or STS failed; repeat the request
	CodeNotFound        = "PUBLISH_NOT_FOUND"       // a toolset read (ShowToolset) names no registered toolset
)

// Error is a refused or failed publish; Message is safe to show.
type Error struct {
	Code        string
	Message     string
	Diagnostics []string
	Err         error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Err }

// SourceDigest is what a publish proof binds: "sha256:" and the hex
// SHA-256 of the source.
func SourceDigest(src []byte) string {
	sum := sha256.Sum256(src)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Binding is the caller proof binding of a publish of file with source.
func Binding(file string, src []byte) caller.Binding {
	return caller.Binding{Action: caller.ActionPublish, Target: file, InputDigest: SourceDigest(src)}
}

var fileName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Publish runs one publish for the caller its proof proves.
func (s *Service) Publish(ctx context.Context, req Request) (*Result, error) {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	switch {
	case !fileName.MatchString(req.File) || filepath.Base(req.File) != req.File:
		return nil, &Error{Code: CodeInvalid, Message: "file must be a base name of 1 to 128 letters, digits, '.', '_' or '-'"}
	case len(req.Source) == 0 || len(req.Source) > MaxSourceBytes:
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("the source must be 1 to %d bytes", MaxSourceBytes)}
	case !utf8.Valid(req.Source):
		return nil, &Error{Code: CodeInvalid, Message: "the source is not valid UTF-8"}
	}
	who, err := s.verify(ctx, req.Proof, Binding(req.File, req.Source))
	if err != nil {
		return nil, err
	}
	res := resolver.Compile(req.File, req.Source, resolver.Options{Toolsets: s.registered(ctx)})
	out := &Result{Diagnostics: []string{}, Publisher: who.Principal}
	for _, d := range res.Diagnostics {
		out.Diagnostics = append(out.Diagnostics, d.String())
	}
	if !res.OK() {
		log.InfoContext(ctx, "publish refused", "file", req.File, "publisher", who.Principal, "diagnostics", len(out.Diagnostics))
		return nil, &Error{Code: CodeInvalid, Message: "the Solution has errors: nothing was published", Diagnostics: out.Diagnostics}
	}
	if refused := s.Deployment.Check(res); len(refused) > 0 {
		for _, d := range refused {
			out.Diagnostics = append(out.Diagnostics, d.String())
		}
		log.InfoContext(ctx, "publish refused by the deployment's allow-lists", "file", req.File, "publisher", who.Principal, "diagnostics", len(refused))
		return nil, &Error{Code: CodeRefused, Diagnostics: out.Diagnostics,
			Message: fmt.Sprintf("%d literal value(s) of the Solution are not allowed by stage %s's tools: nothing was published", len(refused), s.Stage)}
	}
	if err := s.checkBase(ctx, res.Toolset); err != nil {
		return nil, err
	}
	if _, err := s.Store.RegisterToolset(ctx, res.Toolset); err != nil {
		var refusal *toolset.Refusal
		if errors.As(err, &refusal) {
			return nil, &Error{Code: CodeRefused, Message: err.Error(), Diagnostics: out.Diagnostics}
		}
		return nil, &Error{Code: CodeUnavailable, Message: "the toolset could not be registered; nothing was published", Err: err}
	}
	children, err := s.children(ctx, res)
	if err != nil {
		return nil, err
	}
	p, err := Publish(ctx, res, s.Params, s.Stage, s.Region, s.SFN, who.Principal, children)
	if err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: err.Error(), Diagnostics: out.Diagnostics, Err: err}
	}
	// What a parent that starts this Solution is checked against, and the
	// version it starts. A failure here leaves the version published but
	// not recorded: publishing again publishes the same revision's version
	// and records it.
	if err := s.Store.RecordPublished(ctx, ledger.Published{Solution: res.Solution.Name, VersionARN: p.VersionARN, Version: res.Solution.Version,
		ToolsetID: res.Toolset.ID, OutputBoundBytes: res.Manifest.OutputBoundBytes, InputLimitBytes: res.Manifest.InputLimitBytes,
		SourceDigest: res.Manifest.SourceDigest, Publisher: who.Principal}); err != nil {
		return nil, &Error{Code: CodeUnavailable, Message: "the version was published but could not be recorded for parents to start: publish again", Err: err}
	}
	out.StateMachineARN, out.VersionARN, out.Created, out.ToolsetID = p.StateMachineARN, p.VersionARN, p.Created, res.Toolset.ID
	log.InfoContext(ctx, "published", "solution", res.Solution.Name, "version", res.Solution.Version, "toolset_id", res.Toolset.ID,
		"source_digest", res.Manifest.SourceDigest, "publisher", who.Principal, "state_machine_version", p.VersionARN)
	return out, nil
}

// Environment of the publish function (docs/infra.md).
const (
	EnvTable      = "TOOLGATE_TABLE"       // the ledger table (required)
	EnvStage      = "TOOLGATE_STAGE"       // the platform stage (required): parameters under /toolgate/<stage>/
	EnvParamsFile = "TOOLGATE_PARAMS_FILE" // the local stack only: a parameters file instead of SSM
)

// FunctionConfig is the publish function's configuration.
type FunctionConfig struct {
	Table, Stage, ParamsFile string
	Callers                  caller.Config
	// Deployment is read by DeploymentFromEnv.
	Deployment Deployment
}

// FunctionConfigFromEnv reads and checks the publish function's
// configuration: EnvTable, EnvStage, EnvParamsFile, the caller
// verifier's (caller.ConfigFromEnv) and the deployment's allow-lists
// (DeploymentFromEnv).
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	cfg := FunctionConfig{Table: getenv(EnvTable), Stage: getenv(EnvStage), ParamsFile: getenv(EnvParamsFile)}
	switch {
	case cfg.Table == "":
		return cfg, fmt.Errorf("%s is not set", EnvTable)
	case cfg.Stage == "":
		return cfg, fmt.Errorf("%s is not set", EnvStage)
	}
	if err := CheckStage(cfg.Stage); err != nil {
		return cfg, fmt.Errorf("%s: %w", EnvStage, err)
	}
	var err error
	if cfg.Deployment, err = DeploymentFromEnv(getenv); err != nil {
		return cfg, err
	}
	cfg.Callers, err = caller.ConfigFromEnv(getenv)
	return cfg, err
}

// RegisterRequest is one toolset registration through the publish function.
type RegisterRequest struct {
	// Toolset is the toolset document (a compiled *.toolset.json).
	Toolset []byte
	// Proof is bound to caller.ActionRegister, the toolset's id and
	// SourceDigest(Toolset).
	Proof string
}

// RegisterResult is a registration's answer.
type RegisterResult struct {
	ToolsetID string `json:"toolset_id"`
	Created   bool   `json:"created"`
	Publisher string `json:"publisher"`
}

// RegisterBinding is the caller proof binding of a registration.
func RegisterBinding(id string, doc []byte) caller.Binding {
	return caller.Binding{Action: caller.ActionRegister, Target: id, InputDigest: SourceDigest(doc)}
}

// Register registers a toolset for the caller its proof proves, after
// the registration check (ledger.Store.RegisterToolset): the only way
// toolsets reach the table besides a publish, which registers the
// toolset its Solution pins.
func (s *Service) Register(ctx context.Context, req RegisterRequest) (*RegisterResult, error) {
	if len(req.Toolset) == 0 || len(req.Toolset) > MaxSourceBytes {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("the toolset must be 1 to %d bytes", MaxSourceBytes)}
	}
	ts, err := toolset.Parse(req.Toolset)
	if err != nil {
		return nil, &Error{Code: CodeInvalid, Message: err.Error()}
	}
	who, err := s.verify(ctx, req.Proof, RegisterBinding(ts.ID, req.Toolset))
	if err != nil {
		return nil, err
	}
	if err := s.checkBase(ctx, ts); err != nil {
		return nil, err
	}
	created, err := s.Store.RegisterToolset(ctx, ts)
	if err != nil {
		var refusal *toolset.Refusal
		if errors.As(err, &refusal) {
			return nil, &Error{Code: CodeRefused, Message: err.Error()}
		}
		return nil, &Error{Code: CodeUnavailable, Message: "the toolset could not be registered", Err: err}
	}
	if s.Log != nil {
		s.Log.InfoContext(ctx, "toolset registered", "toolset_id", ts.ID, "created", created, "publisher", who.Principal)
	}
	return &RegisterResult{ToolsetID: ts.ID, Created: created, Publisher: who.Principal}, nil
}

// children checks the Solutions a Solution's workflow steps start against
// their last published versions in this stage, and returns each one's
// version ARN by placeholder key (Substitute). A child that is not
// published, whose output bound exceeds a step's output_limit_bytes, or
// whose policy.input_limit_bytes is less than what a step's with may hold,
// refuses the parent (docs/solutions.md, "Workflow steps").
func (s *Service) children(ctx context.Context, res *resolver.Result) (map[string]string, error) {
	out := map[string]string{}
	var refused []string
	for _, key := range slices.Sorted(maps.Keys(res.Manifest.Workflows)) {
		pin := res.Manifest.Workflows[key]
		steps := strings.Join(pin.Steps, ", ")
		child, err := s.Store.PublishedSolution(ctx, pin.Solution)
		switch {
		case errors.Is(err, ledger.ErrNotFound):
			refused = append(refused, fmt.Sprintf("step %s starts workflow %s, which is not published in stage %s: publish it first", steps, pin.Solution, s.Stage))
			continue
		case err != nil:
			return nil, &Error{Code: CodeUnavailable, Message: "the published workflows could not be read; nothing was published", Err: err}
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
		return nil, &Error{Code: CodeRefused, Message: fmt.Sprintf("%d workflow step(s) cannot start their Solution: nothing was published", len(refused)), Diagnostics: refused}
	}
	return out, nil
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
		return &Error{Code: CodeRefused, Message: fmt.Sprintf("toolset %s: its base %s is not registered", ts.ID, ts.Base)}
	}
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: "the base toolset could not be read", Err: err}
	}
	if err := ts.CheckDerived(base); err != nil {
		return &Error{Code: CodeRefused, Message: err.Error()}
	}
	return nil
}

// verify checks a caller proof and maps its refusal to the function's
// codes.
func (s *Service) verify(ctx context.Context, proof string, b caller.Binding) (caller.Identity, error) {
	if s.Callers == nil {
		return caller.Identity{}, &Error{Code: CodeUnauthenticated, Message: "this function has no caller verifier"}
	}
	who, err := s.Callers.Verify(ctx, proof, b)
	if err != nil {
		var ce *caller.Error
		if errors.As(err, &ce) && ce.Reason == caller.Unavailable {
			return who, &Error{Code: CodeUnavailable, Message: ce.Message, Err: err}
		}
		if errors.As(err, &ce) {
			return who, &Error{Code: CodeUnauthenticated, Message: ce.Message + " [" + string(ce.Reason) + "]"}
		}
		return who, &Error{Code: CodeUnavailable, Message: "the caller could not be verified", Err: err}
	}
	return who, nil
}
