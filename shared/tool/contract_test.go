package tool

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The contract is defined once, here: no other package's code spells an
// error code as a string, defines an envelope struct, canonicalises input
// for a digest (RFC 8785 is also the toolset id's, in shared/toolset, and
// nothing else's), or decodes the envelope or checks input numbers on its
// own.
// Tests are left alone: they may write what they expect literally.
func TestContractIsDefinedOnce(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var problems []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", ".cache", "bin", "cdk.out":
				return filepath.SkipDir
			case "examples":
				// A team's function speaks the documented contract with no
				// toolgate code (docs/tools.md, "Platform tools"): its codes
				// are written out on purpose.
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		inContract := strings.HasPrefix(rel, "shared/tool/")
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING && strings.HasPrefix(strings.Trim(n.Value, "`\""), "TOOL_") && !inContract {
					problems = append(problems, fset.Position(n.Pos()).String()+": the error code "+n.Value+" spelled out: use the tool package's Code")
				}
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "jcs" && !inContract && !strings.HasPrefix(rel, "shared/toolset/") {
					problems = append(problems, fset.Position(n.Pos()).String()+": RFC 8785 outside the contract: use tool.InputDigest")
				}
			case *ast.StructType:
				// Another envelope: a struct carrying the envelope's key members.
				tags := map[string]bool{}
				for _, f := range n.Fields.List {
					if f.Tag != nil {
						name, _, _ := strings.Cut(reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json"), ",")
						tags[name] = true
					}
				}
				if tags[MemberIdempotencyKey] && tags[MemberTolerateDuplicates] && tags[MemberInput] && !inContract {
					problems = append(problems, fset.Position(n.Pos()).String()+": an envelope struct outside the contract: use tool.Envelope")
				}
			case *ast.FuncDecl:
				if (n.Name.Name == "exactNumbers" || n.Name.Name == "DecodeEnvelope" || n.Name.Name == "members" || n.Name.Name == "DecodeObject") && !inContract {
					problems = append(problems, fset.Position(n.Pos()).String()+": "+n.Name.Name+" defined outside the contract")
				}
			}
			return true
		})
		return nil
	})
	for _, p := range problems {
		t.Error(p)
	}
}
