package local

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	// Pdeathsig: a test binary that dies (panic, timeout, SIGKILL) takes its
	// stand-ins with it instead of leaving them listening.
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// procStat is what we need of /proc/PID/stat.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

func readStat(path string) (procStat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	j := bytes.IndexByte(b, ' ')
	if i < 0 || j < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, false
	}
	pid, e1 := strconv.Atoi(string(b[:j]))
	ppid, e2 := strconv.Atoi(string(f[1]))
	pgrp, e3 := strconv.Atoi(string(f[2]))
	if e1 != nil || e2 != nil || e3 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]}, true
}

func (s procStat) live() bool { return s.state != 'Z' && s.state != 'X' && s.state != 'x' }

func allProcs() []procStat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make([]procStat, 0, len(paths))
	for _, p := range paths {
		if s, ok := readStat(p); ok {
			out = append(out, s)
		}
	}
	return out
}

// descendants returns the PIDs of every live descendant of pid. The RIE
// starts its runtime in a process group of its own, so signalling our group
// alone would miss the bootstrap.
func descendants(pid int) []int {
	children := map[int][]int{}
	for _, s := range allProcs() {
		if s.live() {
			children[s.ppid] = append(children[s.ppid], s.pid)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// anyAlive reports whether a live (non-zombie) process remains in group pgid
// or among pids.
func anyAlive(pgid int, pids []int) bool {
	want := map[int]bool{}
	for _, p := range pids {
		want[p] = true
	}
	for _, s := range allProcs() {
		if s.live() && (s.pgrp == pgid || want[s.pid]) {
			return true
		}
	}
	return false
}

// listensOn reports whether process pid itself holds a listening TCP socket
// on port, so that a port some other process grabbed between FreePort and
// the child's bind is not taken for the stand-in being ready.
func listensOn(pid, port int) bool {
	inodes := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range bytes.Split(b, []byte("\n"))[1:] {
			f := bytes.Fields(line)
			if len(f) < 10 || string(f[3]) != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := bytes.Cut(f[1], []byte(":"))
			if p, err := strconv.ParseUint(string(hexPort), 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+string(f[9])+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return false
	}
	fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && inodes[l] {
			return true
		}
	}
	return false
}
