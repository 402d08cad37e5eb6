package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/toolgate/toolgate/resolver"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitErrors = 1
	ExitMisuse = 2
)

const usage = `usage: toolgate <command> [arguments]

commands:
  check [--format text|json] [--summary] FILE...   check Solutions; exit 1 on any error
  compile FILE -o DIR                              write DIR/<solution>.asl.json, .toolset.json and .json
  publish FILE [--endpoint URL] [--stage NAME] [--params FILE]   check the toolset is registered, create or update toolgate-<solution>, publish a version
  run SOLUTION --input FILE.json [--name N] [--wait]          start an execution (and follow it)
  toolset FILE                                     print the toolset id a Solution pins
  toolset register [--endpoint URL] [--table T] FILE|DIR... | --tool TOOL   register toolsets (the deployment's operator, with the deploy role)
  ledger [--json] [--cost [--prices FILE] [--sfn-endpoint URL]] [--endpoint URL] [--table T] RUN_ID   print a run's ToolInvocation rows, or its estimated cost
  check-url [--allow ENTRY]... [--allow-address CIDR]... [--resolve HOST=IP[,IP]]... URL   the fetch tool's decision: allow (0), refuse (1)
  check-recipient [--allow ENTRY]... ADDRESS       send-email's recipient decision: allow (0), refuse (1), invalid (3)
  invoke TOOL --input FILE.json [--endpoint URL] [--toolset ID | --fetch-host ENTRY...]   call one tool function directly
  review list | show ID | approve ID [--reason TEXT] | reject ID --reason TEXT (--url URL | --endpoint URL --as NAME)   reviews of gated calls
`

// Run runs one command line (args without the program name) and returns the
// exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitMisuse
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "check":
		return check(rest, stdout, stderr)
	case "compile":
		return compile(rest, stdout, stderr)
	case "toolset":
		return toolsetCmd(rest, stdout, stderr)
	case "ledger":
		return ledgerCmd(rest, stdout, stderr)
	case "invoke":
		return invokeCmd(rest, stdout, stderr)
	case "review":
		return reviewCmd(rest, stdout, stderr)
	case "check-recipient":
		return checkRecipient(rest, stdout, stderr)
	case "check-url":
		return checkURL(rest, stdout, stderr)
	case "publish":
		return publishCmd(rest, stdout, stderr)
	case "run":
		return runCmd(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "toolgate: unknown command %q\n%s", cmd, usage)
	return ExitMisuse
}

// parseInterleaved parses flags that may stand before or after the
// positional arguments ("compile FILE -o DIR").
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("toolgate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func compileFile(path string) (*resolver.Result, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return resolver.Compile(path, src, resolver.Options{}), nil
}

func check(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", stderr)
	format := fs.String("format", "text", "output format: text or json")
	summary := fs.Bool("summary", false, "print one summary line per file instead of the diagnostics")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(files) == 0 || (*format != "text" && *format != "json") || (*summary && *format == "json") {
		fmt.Fprintln(stderr, "usage: toolgate check [--format text|json] [--summary] FILE...")
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
		res, err := compileFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "toolgate check: %v\n", err)
			return ExitMisuse
		}
		out.Valid = out.Valid && res.OK()
		for _, d := range res.Diagnostics {
			if d.Severity == resolver.SeverityError {
				out.Errors++
			} else {
				out.Warnings++
			}
		}
		out.Diagnostics = append(out.Diagnostics, res.Diagnostics...)
		if *summary {
			fmt.Fprintln(stdout, res.Summary())
		}
	}
	switch {
	case *format == "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "toolgate check: %v\n", err)
			return ExitErrors
		}
	case !*summary:
		for _, d := range out.Diagnostics {
			fmt.Fprintln(stdout, d.String())
		}
	}
	if !out.Valid {
		return ExitErrors
	}
	return ExitOK
}

func compile(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("compile", stderr)
	dir := fs.String("o", "", "output directory (created if missing)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(files) != 1 || *dir == "" {
		fmt.Fprintln(stderr, "usage: toolgate compile FILE -o DIR")
		return ExitMisuse
	}
	res, err := compileFile(files[0])
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
	if err := writeOutputs(*dir, res); err != nil {
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

func toolsetID(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("toolset", stderr)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return ExitMisuse
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "usage: toolgate toolset FILE")
		return ExitMisuse
	}
	res, err := compileFile(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolgate toolset: %v\n", err)
		return ExitMisuse
	}
	if !res.OK() {
		for _, d := range res.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		return ExitErrors
	}
	fmt.Fprintln(stdout, res.Toolset.ID)
	return ExitOK
}
