package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver"
	"github.com/toolgate/toolgate/shared/observed"
)

// Exit codes of every command. check-recipient has one more, ExitInvalid.
const (
	// ExitOK is success; warnings are allowed.
	ExitOK = 0
	// ExitErrors is an input with errors, or a refusal or failure.
	ExitErrors = 1
	// ExitMisuse is a command line the CLI cannot run: an unknown command
	// or flag, a missing argument, an unreadable file.
	ExitMisuse = 2
)

// rootLong is the help of toolgate itself.
const rootLong = `toolgate checks and compiles Solutions, publishes and runs them, registers
toolsets and writes their declarations for authors' editors, reads a run's ledger rows, calls tool functions directly and
decides the reviews of gated calls and parked calls.

Exit codes: 0 success (warnings allowed); 1 the input has errors, or the
command was refused or failed; 2 misuse (unknown command or flag, missing
argument, unreadable file); 3 check-recipient's invalid address.`

// Env is everything a command line reads from outside its arguments and
// files: the environment variables (TOOLGATE_* flag defaults, the local
// stack's keys and STS endpoint), the AWS configuration, and where it
// writes. cmd/toolgate passes the process's own (os.Getenv,
// config.LoadDefaultConfig, os.Stdout, os.Stderr); a test passes its own,
// so that tests need not change the process's environment and can run in
// parallel. Every field but Stdin is required.
type Env struct {
	// Getenv returns the value of an environment variable, "" when it is
	// unset (as os.Getenv).
	Getenv func(key string) string
	// LoadAWSConfig loads the AWS configuration (credentials, region,
	// service endpoints such as AWS_ENDPOINT_URL_DYNAMODB) as
	// config.LoadDefaultConfig does; every command that talks to AWS calls
	// it once per client it builds, with no options.
	LoadAWSConfig func(ctx context.Context, optFns ...func(*config.LoadOptions) error) (aws.Config, error)
	// Stdout receives help and each command's output; Stderr what a
	// command says about a misuse, a refusal or a failure.
	Stdout, Stderr io.Writer
	// Stdin is what toolgate credentials set --from-stdin reads the
	// secret from; nil: no standard input (that command refuses).
	Stdin io.Reader
	// Stop, when closed, ends a command that serves until a signal
	// (toolgate review console) as SIGTERM does: it stops serving and
	// exits 0. Nil: only SIGINT or SIGTERM ends it.
	Stop <-chan struct{}

	// reviewPoll is how often the direct lane reads its review (tests
	// shorten it); zero means defaultReviewPoll.
	reviewPoll time.Duration
}

// Run runs one command line (args without the program name) in the
// process's environment (os.Getenv, config.LoadDefaultConfig) and returns
// the exit code, as RunWith does.
func Run(args []string, stdout, stderr io.Writer) int {
	return RunWith(args, Env{Getenv: os.Getenv, LoadAWSConfig: config.LoadDefaultConfig, Stdout: stdout, Stderr: stderr, Stdin: os.Stdin})
}

// RunWith runs one command line (args without the program name) in env and
// returns the exit code. Help (help, -h, --help) goes to env.Stdout; what a
// command says about a misuse, a refusal or a failure goes to env.Stderr.
// Nothing outlives the call: each call has its own flag values and state.
func RunWith(args []string, env Env) int {
	root := newApp(env).newRoot()
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetArgs(goFlagSpelling(root, args)) // never nil: cobra would read os.Args
	cmd, err := root.ExecuteC()
	var code exitCode
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &code):
		return int(code)
	}
	// Cobra's own refusals: an unknown command or flag, a flag without its
	// value.
	return misuse(cmd, "%v", err)
}

// app is one run of a command line: its environment and the state of that
// run alone.
type app struct {
	env Env
	// toolsetsDir is the --toolsets flag of the commands that read lock
	// files (addToolsetsFlag): check, compile, graph, declarations,
	// publish, fork, toolset and its lock, register, show and diff.
	toolsetsDir string
	// shapesFile is the --shapes flag of check, compile and declarations
	// (addShapesFlag); shapes is what it holds, once loadShapes read it.
	shapesFile string
	shapes     *observed.File
	// shownReviews are the pending reviews reviewHint printed, by review
	// id.
	shownReviews map[string]bool
}

func newApp(env Env) *app {
	if env.reviewPoll == 0 {
		env.reviewPoll = defaultReviewPoll
	}
	return &app{env: env, toolsetsDir: "toolsets", shownReviews: map[string]bool{}}
}

// getenv is the run's environment variable key ("" when unset).
func (a *app) getenv(key string) string { return a.env.Getenv(key) }

// loadAWSConfig is the run's AWS configuration, or an error saying it
// could not be loaded.
func (a *app) loadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := a.env.LoadAWSConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}

// addToolsetsFlag gives a command that reads lock files the --toolsets
// flag; the commands that read none do not have it.
func (a *app) addToolsetsFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.toolsetsDir, "toolsets", "toolsets", "the `DIR` of toolset lock files (*.lock.json) a Solution's toolset: ts_... is read from")
}

// newRoot builds the command tree.
func (a *app) newRoot() *cobra.Command {
	root := group(&cobra.Command{
		Use:   "toolgate",
		Short: "toolgate governs tool calls in automated workflows on AWS serverless",
		Long:  rootLong,
	})
	root.AddCommand(a.newCheckCmd(), a.newCompileCmd(), a.newGraphCmd(), a.newDeclarationsCmd(), a.newShapesCmd(), a.newToolsetCmd(), a.newLedgerCmd(), a.newInvokeCmd(), a.newReviewCmd(), a.newParkedCmd(),
		a.newCheckRecipientCmd(), a.newCheckURLCmd(), a.newPublishCmd(), a.newRunCmd(), a.newForkCmd(), a.newCredentialsCmd(), a.newWebhooksCmd(), a.newScheduleCmd(), a.newVersionCmd())
	var settle func(*cobra.Command)
	settle = func(c *cobra.Command) {
		// Run reports errors itself; every Use line is a whole synopsis.
		c.SilenceErrors, c.SilenceUsage, c.DisableFlagsInUseLine = true, true, true
		for _, sub := range c.Commands() {
			settle(sub)
		}
	}
	settle(root)
	// The usage of a group leaves out the line that runs it alone.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}",
		`{{if and .Runnable (not (index .Annotations "`+groupAnnotation+`"))}}`, 1))
	return root
}

// groupAnnotation marks a command group (see group).
const groupAnnotation = "toolgate:group"

// group makes cmd a command group (toolgate, toolgate review): its
// subcommands do the work, and the group run alone, or with a subcommand
// it does not have, is misuse. "help" as its argument prints its help.
// (Cobra prints the help of a command that cannot run, and exits 0: so a
// group runs, and its usage leaves out the line for running it alone.)
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Annotations = map[string]string{groupAnnotation: "true"}
	cmd.SuggestionsMinimumDistance = 2 // cobra's default for toolgate's own commands
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return exit(misuse(cmd, "name a command"))
		case args[0] == "help":
			return cmd.Help()
		}
		if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
			return exit(misuse(cmd, "unknown command %q; did you mean %s?", args[0], strings.Join(near, " or ")))
		}
		return exit(misuse(cmd, "unknown command %q", args[0]))
	}
	return cmd
}

// exitCode ends a command with another code than ExitOK, once the command
// has said why.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// exit is a command's exit code as cobra's RunE returns it: nil for ExitOK.
func exit(code int) error {
	if code == ExitOK {
		return nil
	}
	return exitCode(code)
}

// misuse says on stderr what is wrong with the command line, followed by
// the command's usage, and returns ExitMisuse.
func misuse(cmd *cobra.Command, format string, a ...any) int {
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n%s", cmd.CommandPath(), fmt.Sprintf(format, a...), cmd.UsageString())
	return ExitMisuse
}

// compileFile compiles the Solution at path, read as resolver.ReadFile
// reads a Solution: a regular file of at most resolver.MaxSourceBytes.
func (a *app) compileFile(path string) (*resolver.Result, error) {
	src, err := resolver.ReadFile(path, resolver.SourceFile)
	if err != nil {
		return nil, err
	}
	return a.compileSource(path, src), nil
}

// compileSource compiles Solution src, the text of file path.
func (a *app) compileSource(path string, src []byte) *resolver.Result {
	return resolver.Compile(path, src, resolver.Options{Toolsets: resolver.LockLookup(a.toolsetsDir), Observed: a.shapes})
}

// newCheckCmd is `toolgate check FILE...`.
func (a *app) newCheckCmd() *cobra.Command {
	var format string
	var summary bool
	cmd := &cobra.Command{
		Use:   "check [--format text|json] [--summary] [--toolsets DIR] [--shapes FILE] FILE...",
		Short: "check Solutions; exit 1 on any error",
		Long: `Checks Solutions with the resolver and prints their diagnostics, as
file:line:col: error|warning: [rule-id] message, or as one JSON document.
Exit 0 when every file is clean (warnings allowed), 1 on any error.`,
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(a.check(cmd, files, format, summary))
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output `FORMAT`: text or json")
	cmd.Flags().BoolVar(&summary, "summary", false, "print one summary line per file instead of the diagnostics")
	a.addToolsetsFlag(cmd)
	a.addShapesFlag(cmd)
	return cmd
}

func (a *app) check(cmd *cobra.Command, files []string, format string, summary bool) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(files) == 0:
		return misuse(cmd, "name at least one Solution file")
	case format != "text" && format != "json":
		return misuse(cmd, "--format %q: want text or json", format)
	case summary && format == "json":
		return misuse(cmd, "--summary is for --format text")
	}
	if err := a.loadShapes(); err != nil {
		fmt.Fprintf(stderr, "toolgate check: %v\n", err)
		return ExitMisuse
	}
	type doc struct {
		Valid       bool                  `json:"valid"`
		Errors      int                   `json:"errors"`
		Warnings    int                   `json:"warnings"`
		Diagnostics []resolver.Diagnostic `json:"diagnostics"`
	}
	out := doc{Valid: true, Diagnostics: []resolver.Diagnostic{}}
	for _, f := range files {
		res, err := a.compileFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate check: %v\n", err)
			return ExitMisuse
		}
		// The totals, with those a [too-many] diagnostic counts.
		out.Valid = out.Valid && res.OK()
		out.Errors += res.Counts.Errors
		out.Warnings += res.Counts.Warnings
		out.Diagnostics = append(out.Diagnostics, res.Diagnostics...)
		if summary {
			fmt.Fprintln(stdout, res.Summary())
		}
	}
	switch {
	case format == "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "toolgate check: %v\n", err)
			return ExitErrors
		}
	case !summary:
		for _, d := range out.Diagnostics {
			fmt.Fprintln(stdout, d.String())
		}
	}
	if !out.Valid {
		return ExitErrors
	}
	return ExitOK
}

// newCompileCmd is `toolgate compile FILE -o DIR`.
func (a *app) newCompileCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "compile FILE -o DIR [--toolsets DIR] [--shapes FILE]",
		Short: "write DIR/<solution>.asl.json, .toolset.json and .json",
		Long: `Compiles a Solution and writes its state machine definition
(<solution>.asl.json), the toolset it pins (<solution>.toolset.json) and its
manifest (<solution>.json) to DIR. Nothing is written when the Solution has
an error (exit 1).`,
		RunE: func(cmd *cobra.Command, files []string) error {
			return exit(a.compile(cmd, files, dir))
		},
	}
	cmd.Flags().StringVarP(&dir, "o", "o", "", "the output directory `DIR` (created if missing)")
	a.addToolsetsFlag(cmd)
	a.addShapesFlag(cmd)
	return cmd
}

func (a *app) compile(cmd *cobra.Command, files []string, dir string) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case len(files) != 1:
		return misuse(cmd, "name one Solution file")
	case dir == "":
		return misuse(cmd, "-o DIR is required")
	}
	if err := a.loadShapes(); err != nil {
		fmt.Fprintf(stderr, "toolgate compile: %v\n", err)
		return ExitMisuse
	}
	res, err := a.compileFile(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolgate compile: %v\n", err)
		return ExitMisuse
	}
	for _, d := range res.Diagnostics {
		fmt.Fprintln(stderr, d.String())
	}
	if !res.OK() {
		return ExitErrors
	}
	if err := writeOutputs(dir, res); err != nil {
		fmt.Fprintf(stderr, "toolgate compile: %v\n", err)
		return ExitErrors
	}
	fmt.Fprintln(stdout, res.Summary())
	return ExitOK
}

// writeOutputs writes the three files, each through a temporary file and a
// rename, so that a reader never sees a half-written file.
func writeOutputs(dir string, res *resolver.Result) error {
	ts, err := res.Toolset.MarshalIndent()
	if err != nil {
		return err
	}
	manifest, err := json.MarshalIndent(res.Manifest, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	name := res.Solution.Name
	src, _ := os.Stat(res.File)
	files := []struct {
		name string
		data []byte
	}{
		{name + ".asl.json", res.Definition},
		{name + ".toolset.json", ts},
		{name + ".json", append(manifest, '\n')},
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Check every target before writing any: none may be the source file
	// or a directory, so that a refusal leaves the directory as it was.
	for _, f := range files {
		target := filepath.Join(dir, f.name)
		st, err := os.Stat(target)
		if err != nil {
			continue
		}
		if src != nil && os.SameFile(src, st) {
			return fmt.Errorf("%s is the source file; choose another output directory", target)
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory", target)
		}
	}
	var temps []string
	defer func() {
		for _, t := range temps {
			os.Remove(t)
		}
	}()
	for _, f := range files {
		tmp, err := os.CreateTemp(dir, "."+f.name+".*")
		if err != nil {
			return err
		}
		temps = append(temps, tmp.Name())
		_, werr := tmp.Write(f.data)
		merr := tmp.Chmod(0o644) // CreateTemp makes 0600; outputs are for publishers too
		cerr := tmp.Close()
		if err := errors.Join(werr, merr, cerr); err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	for i, f := range files {
		if err := os.Rename(temps[i], filepath.Join(dir, f.name)); err != nil {
			return err
		}
	}
	temps = nil
	return nil
}

// toolsetID is `toolgate toolset FILE` (newToolsetCmd): the id of the
// toolset a Solution pins, or of a toolset file's toolset. A toolset file
// naming MCP servers has none until registration lists them.
func (a *app) toolsetID(cmd *cobra.Command, files []string) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if len(files) != 1 {
		return misuse(cmd, "name one Solution file")
	}
	src, err := resolver.ReadFile(files[0], resolver.SourceFile)
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset: %v\n", err)
		return ExitMisuse
	}
	if resolver.IsToolsetFile(src) {
		res := a.compileToolsetFile(files[0], src)
		for _, d := range res.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		switch {
		case !res.OK():
			return ExitErrors
		case res.Draft:
			fmt.Fprintf(stderr, "%s: %s: toolgate toolset register %s prints it and writes it to %s\n",
				files[0], draftNote(res.Toolset), files[0], filepath.Join(filepath.Dir(files[0]), resolver.LockFile(res.Toolset.Name)))
			return ExitErrors
		}
		fmt.Fprintln(stdout, res.Toolset.ID)
		return ExitOK
	}
	res := a.compileSource(files[0], src)
	if !res.OK() {
		for _, d := range res.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		return ExitErrors
	}
	fmt.Fprintln(stdout, res.Toolset.ID)
	return ExitOK
}
