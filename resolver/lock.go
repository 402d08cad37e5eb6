package resolver

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/shared/toolset"
)

// LockSuffix ends a lock file's name: "<toolset>.lock.json", the whole
// pinned toolset and its id as toolset.MarshalIndent writes it, which
// `toolgate toolset register` writes beside the toolset file and `check`
// and `compile` read offline (docs/toolsets.md).
const LockSuffix = ".lock.json"

// LockFile is the lock file name of a toolset named name.
func LockFile(name string) string { return name + LockSuffix }

// LockLookup returns a lookup (ToolsetOptions.Lookup, Options.Toolsets)
// that finds a toolset by id among the lock files (*.lock.json) in dir.
// Each lock is parsed strictly and its id checked against its content
// (toolset.Parse); a lock that is not one is an error naming its file. An
// id no lock holds is an error wrapping ErrToolsetNotFound. Each lock is
// read as ReadFile does, so a named pipe or a lock over MaxLockBytes is an
// error naming its file.
func LockLookup(dir string) func(id string) (*toolset.Toolset, error) {
	return func(id string) (*toolset.Toolset, error) {
		locks, err := filepath.Glob(filepath.Join(dir, "*"+LockSuffix))
		if err != nil {
			return nil, err
		}
		for _, f := range locks {
			data, err := ReadFile(f, LockFileBound)
			if err != nil {
				return nil, err
			}
			if !strings.Contains(string(data), id) {
				continue
			}
			ts, err := toolset.Parse(data)
			if err != nil {
				return nil, fmt.Errorf("lock %s: %w", filepath.Base(f), err)
			}
			if ts.ID == id {
				return ts, nil
			}
		}
		return nil, fmt.Errorf("no lock file (*%s) in the toolsets directory holds it: %w", LockSuffix, ErrToolsetNotFound)
	}
}

// DirReader returns a ToolsetOptions.ReadFile that reads files relative
// to dir (a toolset file's directory) through an os.Root: a path, or a
// symbolic link on it, that leads out of dir is refused, so a schema file
// linked to any other file of the machine cannot copy it into a lock and
// the table. A schema file is read as ReadFile reads it with bound
// SchemaFile: a regular file of at most toolset.MaxSchemaBytes. Errors
// are "read <rel>: <reason>", the reason their Unwrap.
func DirReader(dir string) func(rel string) ([]byte, error) {
	return func(rel string) ([]byte, error) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: rel, Err: unwrapPath(err)}
		}
		defer root.Close()
		return readRoot(root, rel, SchemaFile)
	}
}
