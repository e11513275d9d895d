package content

import (
	"io/fs"
	"os"
	"path"
	"syscall"
	"time"
)

// osTree is a content tree on a Linux file system. os.File costs nine
// system calls to read a small file (open, four fcntl and an epoll_ctl to
// try the poller, fstat, a read and the read that finds the end, close);
// readFileInfo makes four (open, fstat, one read of the size the stat
// gave, close) and allocates no os.File. A file that grew after the fstat
// is read to the size the stat gave, which is the stat a stat cache
// records with it, so the next sync reads it again.
type osTree struct {
	fs.FS
	root string
}

func newOSTree(dir string) fs.FS { return osTree{FS: os.DirFS(dir), root: dir} }

func (t osTree) full(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if t.root == "" {
		return name, nil
	}
	return t.root + "/" + name, nil
}

func (t osTree) readFileInfo(name string, buf []byte) ([]byte, fs.FileInfo, error) {
	full, err := t.full("open", name)
	if err != nil {
		return nil, nil, err
	}
	var fd int
	for {
		fd, err = syscall.Open(full, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	info := &statInfo{name: path.Base(name)}
	if err := syscall.Fstat(fd, &info.sys); err != nil {
		return nil, nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	size := info.sys.Size
	if size <= 0 || size > 1<<30 || info.IsDir() {
		// Nothing to size the buffer by (or a directory, whose read
		// fails): the general way, which reports what os reports.
		return readFileInfo(t.FS, name, nil)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	n := 0
	for n < len(buf) {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if k == 0 {
			break // shrank since the fstat
		}
		n += k
	}
	return buf[:n], info, nil
}

func (t osTree) statFile(name string) (fs.FileInfo, error) {
	full, err := t.full("stat", name)
	if err != nil {
		return nil, err
	}
	info := &statInfo{name: path.Base(name)}
	for {
		err = syscall.Stat(full, &info.sys)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return info, nil
}

// statInfo is fs.FileInfo of a stat, as os makes it on Linux: Sys is the
// *syscall.Stat_t.
type statInfo struct {
	name string
	sys  syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.sys.Size }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.sys }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.sys.Mtim.Unix()) }

// Mode is os's fillFileStatFromSys (os/stat_linux.go).
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.sys.Mode & 0o777)
	switch s.sys.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.sys.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.sys.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.sys.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
