package resolver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// A FileBound is what toolgate reads of one kind of file: at most Max
// bytes of a regular file. Kind names the file in errors ("a Solution or
// toolset file").
type FileBound struct {
	Kind string
	Max  int64
}

// The bounds of the files the CLI reads.
var (
	// SourceFile is a Solution or a toolset file, YAML or JSON: at most
	// MaxSourceBytes (8 MiB), as parseYAML and parseJSON allow.
	SourceFile = FileBound{"a Solution or toolset file", MaxSourceBytes}
	// SchemaFile is a schema file a toolset file's platform tool names:
	// at most MaxSchemaFileBytes (1 MiB), room for indentation and
	// comments; the schema itself, compact, is held to
	// toolset.MaxSchemaBytes (64 KiB) where it is written
	// (toolset.CheckSchemaSize, [tool-schema]).
	SchemaFile = FileBound{"a schema file", MaxSchemaFileBytes}
	// LockFileBound is a lock (*.lock.json) or a compiled toolset
	// (*.toolset.json): at most MaxLockBytes (32 MiB).
	LockFileBound = FileBound{"a lock file", MaxLockBytes}
)

// MaxSchemaFileBytes bounds a schema file as stored (1 MiB): 16 times
// the compact schema's toolset.MaxSchemaBytes, for indentation, comments
// and YAML's longer spelling.
const MaxSchemaFileBytes = 1 << 20

// MaxLockBytes bounds a lock file or a compiled toolset (32 MiB): the
// toolset as toolset.MarshalIndent writes it, whose RFC 8785 form is at
// most toolset.MaxBodyBytes (390 000 bytes). Indenting puts each value of
// a schema on a line of its own, at most 3 + toolset.MaxSchemaDepth levels
// of two spaces deep, so the canonical "0," of 2 bytes becomes at most 73
// (and HTML escaping makes a string's "<" six bytes): a lock toolgate
// writes is at most 36.5 × 390 000 bytes, under 15 MB.
const MaxLockBytes = 32 << 20

// ReadFile reads the file at path as bound b allows: a regular file (a
// symbolic link to one is followed) of at most b.Max bytes. A named pipe,
// a device, a socket or a directory is refused before it is opened, as
// opening a named pipe waits for a writer; the file is opened without
// waiting and checked again, in case it was replaced in between. A file of
// more than b.Max bytes is refused once b.Max + 1 bytes are read. Errors
// name path and, for a file too big, the bound.
func ReadFile(path string, b FileBound) ([]byte, error) {
	data, err := readRegular(b, func() (fs.FileInfo, error) { return os.Stat(path) },
		func() (*os.File, error) { return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, nil
}

// readRoot is ReadFile for a path relative to root, which refuses a path
// or a symbolic link leading out of it.
func readRoot(root *os.Root, rel string, b FileBound) ([]byte, error) {
	data, err := readRegular(b, func() (fs.FileInfo, error) { return root.Stat(rel) },
		func() (*os.File, error) { return root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0) })
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: rel, Err: err}
	}
	return data, nil
}

// readRegular reads a file of bound b that stat describes and open opens.
// Its errors are the reason alone, without the file's name.
func readRegular(b FileBound, stat func() (fs.FileInfo, error), open func() (*os.File, error)) ([]byte, error) {
	st, err := stat()
	if err != nil {
		return nil, unwrapPath(err)
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	f, err := open()
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, unwrapPath(err)
	}
	if err := regular(st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, b.Max+1))
	switch {
	case err != nil:
		return nil, unwrapPath(err)
	case int64(len(data)) > b.Max:
		return nil, fmt.Errorf("the file is over %s (%d bytes), the most toolgate reads of %s", sizeText(b.Max), b.Max, b.Kind)
	}
	return data, nil
}

// regular refuses a file that is not a regular file, saying what it is.
func regular(st fs.FileInfo) error {
	m := st.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "of mode " + m.Type().String()
	}
	return fmt.Errorf("the file is %s, not a regular file: toolgate reads regular files only", what)
}

// unwrapPath is err without the *fs.PathError that names the file again.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// sizeText is n bytes in MiB or KiB when it is a whole number of them.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
