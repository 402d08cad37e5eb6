package table

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// module is this module's path (go.mod).
const module = "github.com/toolgate/toolgate"

// adapters are the packages that map items to and from DynamoDB
// (docs/ledger.md, "The table declared once"): they alone may name a
// declared attribute where the DynamoDB client is imported, and carry
// dynamodbav tags. shared/table itself is exempt from every rule.
var adapters = []string{
	module + "/shared/ledger",
	module + "/shared/ledger/tabledef",
	module + "/shared/review/dynamo",
	module + "/shared/credential/vault",
	module + "/shared/webhook/store",
	module + "/shared/webhook/outbox",
	module + "/shared/park/dynamo",
	module + "/shared/inbound/store",
	module + "/shared/observed/dynamo",
}

// dynamoImports are the import paths that make a package a DynamoDB
// client: the client and its types (service/dynamodb/...), and the
// feature packages that build items and expressions (attributevalue,
// expression). Any of them, not only the client and expression: a package
// that builds items from types.AttributeValue names attributes as surely.
var dynamoImports = []string{
	"github.com/aws/aws-sdk-go-v2/service/dynamodb",
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb",
}

// genericAttributes are declared attribute names that rule (b) does not
// look for, because another contract spells the same word and a DynamoDB
// client package has reason to: "arn", the first field of every ARN
// (code parsing ARNs compares it); "input", a tool call's input (the
// envelope's field, the root of a schema problem's path); "status", the
// review API's query parameter; "version", the CLI's version command;
// "source", the CLI's webhooks source command (a webhook call event's
// attribute too); "timeout_seconds", a toolset tool's field (a review
// copies it). Every other name, however plain ("body", "tool", "pk"), is
// reported.
var genericAttributes = []string{"arn", "input", "status", "version", "source", "timeout_seconds"}

// notDynamoDB reports whether the string literal arguments of call cannot
// name an attribute: a log/slog call's message and keys (log keys take
// ledger attributes' names on purpose: STYLE.md, "Name a thing once"), or a
// flag's definition (flag, pflag: StringVar, BoolVar, ...).
func notDynamoDB(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	switch n := sel.Sel.Name; n {
	case "Debug", "Info", "Warn", "Error", "DebugContext", "InfoContext", "WarnContext", "ErrorContext", "Log", "With":
		return true
	default:
		return strings.HasSuffix(n, "Var") || strings.HasSuffix(n, "VarP")
	}
}

// rules are what findLiterals looks for, from the declaration.
type rules struct {
	// keyPrefixes start no string literal outside shared/table: every
	// item kind's partition key prefix, the index's, the call sort key's.
	keyPrefixes []string
	// keyValues are no string literal outside shared/table: the constant
	// sort keys ("TOOLSET"), matched whole since the words are plain.
	keyValues []string
	// attributes are no string literal of a DynamoDB client outside the
	// adapters.
	attributes []string
}

// declared are the rules the declaration gives.
func declared() rules {
	r := rules{keyPrefixes: slices.Concat(Prefixes(), []string{CallSKPrefix})}
	for _, ix := range Indexes {
		if ix.PKPrefix != "" { // a number-keyed index has no prefix to look for
			r.keyPrefixes = append(r.keyPrefixes, ix.PKPrefix)
		}
	}
	r.attributes = []string{PK, SK}
	for _, k := range Kinds {
		if k.SKValue != "" && !slices.Contains(r.keyValues, k.SKValue) {
			r.keyValues = append(r.keyValues, k.SKValue)
		}
		for _, a := range k.Attributes {
			if !slices.Contains(r.attributes, a.Name) && !slices.Contains(genericAttributes, a.Name) {
				r.attributes = append(r.attributes, a.Name)
			}
		}
	}
	return r
}

// source is one parsed non-test file and the import path of its package.
type source struct {
	pkg  string
	file *ast.File
}

// findLiterals returns, in file and line order, "file:line:column: what"
// for each place in files that spells the table outside its declaration:
//
//	(a) a string literal starting with a key prefix, or equal to a
//	    constant sort key, in any package but shared/table;
//	(b) a string literal equal to a declared attribute name (but the
//	    genericAttributes) in a package importing a DynamoDB client
//	    (dynamoImports), other than the adapters and shared/table, unless
//	    it is an argument of a log call or a flag's definition
//	    (notDynamoDB);
//	(c) a dynamodbav struct tag outside the adapters and shared/table.
//
// Struct tags are not string literals for (a) and (b); import paths are
// not either.
func findLiterals(fset *token.FileSet, files []source, r rules) []string {
	client := map[string]bool{}
	for _, s := range files {
		for _, im := range s.file.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for _, d := range dynamoImports {
				client[s.pkg] = client[s.pkg] || p == d || strings.HasPrefix(p, d+"/")
			}
		}
	}
	type finding struct {
		pos  token.Position
		what string
	}
	var found []finding
	report := func(pos token.Pos, format string, args ...any) {
		found = append(found, finding{fset.Position(pos), fmt.Sprintf(format, args...)})
	}
	for _, s := range files {
		if s.pkg == module+"/shared/table" {
			continue
		}
		adapter := slices.Contains(adapters, s.pkg)
		skip := map[*ast.BasicLit]bool{}
		for _, im := range s.file.Imports {
			skip[im.Path] = true
		}
		notAttribute := map[*ast.BasicLit]bool{}
		ast.Inspect(s.file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if notDynamoDB(n) {
					for _, a := range n.Args {
						if lit, ok := a.(*ast.BasicLit); ok {
							notAttribute[lit] = true
						}
					}
				}
			case *ast.Field:
				if n.Tag == nil {
					return true
				}
				skip[n.Tag] = true
				tag, _ := strconv.Unquote(n.Tag.Value)
				if v, ok := reflect.StructTag(tag).Lookup("dynamodbav"); ok && !adapter {
					report(n.Tag.Pos(), "dynamodbav tag %q outside the adapters: map items in an adapter (shared/ledger, shared/review/dynamo, shared/credential/vault, shared/webhook/store, shared/webhook/outbox, shared/park/dynamo, shared/inbound/store)", v)
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING || skip[n] {
					return true
				}
				v, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				for _, p := range r.keyPrefixes {
					if strings.HasPrefix(v, p) {
						report(n.Pos(), "key prefix %q in a string literal: build keys with shared/table (Kind.Key, CallSK)", p)
					}
				}
				if slices.Contains(r.keyValues, v) {
					report(n.Pos(), "sort key %q in a string literal: use the kind's SKValue (shared/table)", v)
				}
				if client[s.pkg] && !adapter && !notAttribute[n] && slices.Contains(r.attributes, v) {
					report(n.Pos(), "attribute name %q in a string literal of a DynamoDB client: leave items to an adapter", v)
				}
			}
			return true
		})
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i].pos, found[j].pos
		return a.Filename < b.Filename || a.Filename == b.Filename && a.Offset < b.Offset
	})
	var out []string
	for _, f := range found {
		out = append(out, fmt.Sprintf("%s: %s", f.pos, f.what))
	}
	return out
}

// moduleSources parses every non-test .go file of the module whose root
// is dir, skipping testdata, node_modules and hidden directories (which
// the go command ignores too), with file names relative to dir.
func moduleSources(dir string) (*token.FileSet, []source, error) {
	fset := token.NewFileSet()
	var files []source
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, filepath.ToSlash(rel), src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := module
		if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
			pkg += "/" + d
		}
		files = append(files, source{pkg, f})
		return nil
	})
	return fset, files, err
}

// No package but this one spells a key prefix or a constant sort key, no
// DynamoDB client but the adapters spells a declared attribute, and no
// package but the adapters carries dynamodbav tags: keys, names and item
// mappings follow from the declaration.
func TestNoTableLiteralsOutsideTheDeclaration(t *testing.T) {
	root := filepath.Join("..", "..")
	if mod, err := os.ReadFile(filepath.Join(root, "go.mod")); err != nil || !strings.HasPrefix(string(mod), "module "+module+"\n") {
		t.Fatalf("%s is not the module's root (%v)", root, err)
	}
	fset, files, err := moduleSources(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found %d files: is %s the module's root?", len(files), root)
	}
	for _, f := range findLiterals(fset, files, declared()) {
		t.Error(f)
	}
}

// findLiterals catches each rule on a fixture, and leaves alone what no
// rule covers: comments, import paths, a key prefix inside a literal, an
// attribute name outside a DynamoDB client, the adapters' names and tags.
func TestFindLiterals(t *testing.T) {
	fixture := map[string]string{
		// (a) in a package with no DynamoDB client, (c), and what is left alone.
		"resolver/x/x.go": `package x

import "fmt"

// pk "RUN#<run_id>", sk "TOOLSET": comments are not literals.
type item struct {
	Body string ` + "`dynamodbav:\"body\" json:\"body\"`" + `
	Name string ` + "`json:\"status\"`" + `
}

var key = "RUN#" + "r1"
var sk = "TOOLSET"
var notAKey = "a RUN#"
var status = "status"

func f() { fmt.Println("CALL#0001", ` + "`REVIEWS#PENDING`" + `) }
`,
		// (b) in a DynamoDB client.
		"functions/y/y.go": `package y

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

var item = map[string]types.AttributeValue{"body": nil, "pk": nil}
var s = "a body"

func g(log interface{ InfoContext(any, string, ...any) }, fs interface{ StringVar(*string, string, string, string) }) {
	log.InfoContext(nil, "tool", "tool", "x")
	var v string
	fs.StringVar(&v, "tool", "", "the tool")
	_ = []string{"arn", "tool"}
}
`,
		// A second file of the client package, with no import of its own.
		"functions/y/z.go": `package y

var names = map[string]string{"#b": "binding"}
`,
		// An adapter: names and tags, but no key prefix.
		"shared/ledger/a.go": `package ledger

import "github.com/aws/aws-sdk-go-v2/service/dynamodb"

var _ dynamodb.Options
var attr = "body"

type row struct {
	Body string ` + "`dynamodbav:\"body\"`" + `
}

var pk = "TOOLSET#" + "id"
`,
		// The declaration itself.
		"shared/table/t.go": `package table

var prefix, body = "RUN#", "body"
`,
	}
	fset := token.NewFileSet()
	var files []source
	for _, name := range slices.Sorted(maps.Keys(fixture)) {
		f, err := parser.ParseFile(fset, name, fixture[name], parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, source{module + "/" + filepath.Dir(name), f})
	}
	got := findLiterals(fset, files, declared())
	want := []string{
		`functions/y/y.go:5:44: attribute name "body" in a string literal of a DynamoDB client: leave items to an adapter`,
		`functions/y/y.go:5:57: attribute name "pk" in a string literal of a DynamoDB client: leave items to an adapter`,
		`functions/y/y.go:12:22: attribute name "tool" in a string literal of a DynamoDB client: leave items to an adapter`,
		`functions/y/z.go:3:37: attribute name "binding" in a string literal of a DynamoDB client: leave items to an adapter`,
		`resolver/x/x.go:7:14: dynamodbav tag "body" outside the adapters: map items in an adapter (shared/ledger, shared/review/dynamo, shared/credential/vault, shared/webhook/store, shared/webhook/outbox, shared/park/dynamo, shared/inbound/store)`,
		`resolver/x/x.go:11:11: key prefix "RUN#" in a string literal: build keys with shared/table (Kind.Key, CallSK)`,
		`resolver/x/x.go:12:10: sort key "TOOLSET" in a string literal: use the kind's SKValue (shared/table)`,
		`resolver/x/x.go:16:24: key prefix "CALL#" in a string literal: build keys with shared/table (Kind.Key, CallSK)`,
		`resolver/x/x.go:16:37: key prefix "REVIEWS#" in a string literal: build keys with shared/table (Kind.Key, CallSK)`,
		`shared/ledger/a.go:12:10: key prefix "TOOLSET#" in a string literal: build keys with shared/table (Kind.Key, CallSK)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("findLiterals =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
