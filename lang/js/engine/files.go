package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
)

// files is the program's fs: paths under the directories it was given, and
// nothing else. Each directory is an os.Root, so that no symbolic link or
// ".." leads out of it.
type files struct {
	names []string          // the directories, as the program names them
	hosts map[string]string // ... and where they are
	roots map[string]*os.Root
}

func newFiles(dirs map[string]string) *files {
	f := &files{hosts: dirs, roots: map[string]*os.Root{}}
	for name := range dirs {
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	if i := slices.Index(f.names, "/workspace"); i > 0 {
		f.names[0], f.names[i] = f.names[i], f.names[0] // relative paths start there
	}
	return f
}

func (f *files) close() {
	for _, r := range f.roots {
		_ = r.Close()
	}
}

// resolve finds the root that holds p and p's path inside it.
func (f *files) resolve(p string) (*os.Root, string, error) {
	if len(f.names) == 0 {
		return nil, "", errors.New("file access is not available here")
	}
	if !path.IsAbs(p) {
		p = path.Join(f.names[0], p)
	}
	p = path.Clean(p)
	for _, name := range f.names {
		rel, ok := strings.CutPrefix(p, name)
		if !ok || rel != "" && rel[0] != '/' {
			continue
		}
		rel = strings.TrimPrefix(rel, "/")
		if rel == "" {
			rel = "."
		}
		r := f.roots[name]
		if r == nil {
			var err error
			if r, err = os.OpenRoot(f.hosts[name]); err != nil {
				return nil, "", fmt.Errorf("%s is not available: %s", name, reason(err))
			}
			f.roots[name] = r
		}
		return r, rel, nil
	}
	return nil, "", fmt.Errorf("%s: programs may use files under %s only", shorten(p), strings.Join(f.names, " and "))
}

// fileInfo is what stat and readDir tell of a file.
type fileInfo struct {
	Name        string  `json:"name,omitempty"`
	Size        int64   `json:"size"`
	IsFile      bool    `json:"isFile"`
	IsDirectory bool    `json:"isDirectory"`
	IsSymlink   bool    `json:"isSymlink"`
	Mtime       float64 `json:"mtime"` // ms since the epoch
}

func info(fi fs.FileInfo) fileInfo {
	return fileInfo{Size: fi.Size(), IsFile: fi.Mode().IsRegular(), IsDirectory: fi.IsDir(),
		IsSymlink: fi.Mode()&fs.ModeSymlink != 0, Mtime: float64(fi.ModTime().UnixMilli())}
}

// maxFileRead bounds a file read into the program at once.
const maxFileRead = 64 << 20

// op is the prelude's fs: op(name, path, ...).
func (f *files) op(a []any) (any, error) {
	op, p := argString(a, 0), argString(a, 1)
	r, rel, err := f.resolve(p)
	if err != nil {
		return nil, err
	}
	v, err := f.do(r, rel, op, a)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %s", op, shorten(p), reason(err))
	}
	return v, nil
}

func (f *files) do(r *os.Root, rel, op string, a []any) (any, error) {
	switch op {
	case "read":
		fi, err := r.Stat(rel)
		if err != nil {
			return nil, err
		}
		if fi.Size() > maxFileRead {
			return nil, fmt.Errorf("larger than %d MiB", maxFileRead>>20)
		}
		b, err := r.ReadFile(rel)
		if err != nil {
			return nil, err
		}
		if argBool(a, 2) {
			return latin1(b), nil
		}
		return string(b), nil
	case "write":
		data := []byte(argString(a, 2))
		if argBool(a, 3) {
			var err error
			if data, err = fromLatin1(argString(a, 2)); err != nil {
				return nil, err
			}
		}
		flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if argBool(a, 4) {
			flag = os.O_WRONLY | os.O_CREATE | os.O_APPEND
		}
		w, err := r.OpenFile(rel, flag, 0o644)
		if err != nil {
			return nil, err
		}
		_, err = w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return nil, err
	case "readDir":
		d, err := r.Open(rel)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		list, err := d.Readdir(-1)
		if err != nil {
			return nil, err
		}
		out := []fileInfo{}
		for _, fi := range list {
			i := info(fi)
			i.Name = fi.Name()
			out = append(out, i)
		}
		slices.SortFunc(out, func(a, b fileInfo) int { return strings.Compare(a.Name, b.Name) })
		b, _ := json.Marshal(out)
		return string(b), nil
	case "stat":
		fi, err := r.Lstat(rel)
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(info(fi))
		return string(b), nil
	case "exists":
		_, err := r.Lstat(rel)
		return err == nil, nil
	case "mkdir":
		if argBool(a, 2) {
			return nil, r.MkdirAll(rel, 0o755)
		}
		return nil, r.Mkdir(rel, 0o755)
	case "remove":
		if argBool(a, 2) {
			return nil, r.RemoveAll(rel)
		}
		return nil, r.Remove(rel)
	}
	return nil, errors.New("unknown operation")
}

// reason is an error's cause in a few words, with no path in it.
func reason(err error) string {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrExist):
		return "file exists"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
