package cli

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// On Linux the console admits only connections from sockets its own user
// owns: another user of the machine (who can read the capability in the
// process list, and reach any 127.0.0.1 port) is cut off before HTTP.
// The other user is uid 65534 (nobody), connecting with bash; the
// test needs root to be that user, and skips otherwise.
func TestConsoleListenerAdmitsOnlyItsOwnUser(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp: the check is Linux's")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := sameUserListener{Listener: ln, uid: os.Getuid()}
	defer l.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	own, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("a connection of the console's own user was not admitted")
	}
	if os.Getuid() != 0 {
		t.Skip("not root: cannot connect as another user")
	}
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to connect as another user")
	}
	// bash's /dev/tcp: "closed" when the console closes the connection
	// at once, "open" when it keeps it (no answer within 5 s).
	cmd := exec.Command(sh, "-c", `exec 3<>/dev/tcp/127.0.0.1/$0 || exit 3
if read -t 5 -n 1 x <&3; then echo data; elif [ $? -gt 128 ]; then echo open; else echo closed; fi`, strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash as nobody: %v", err)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("a connection of another user was admitted")
	default:
	}
	if string(out) != "closed\n" {
		t.Fatalf("another user's connection: %q; want it closed at once", out)
	}
}

// peerUID reads the owner of the peer socket from /proc/net/tcp's and
// tcp6's format: the line whose local port is the peer's and remote port
// the console's.
func TestPeerUIDReadsProcNetTCP(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:BB80 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0
   1: 0100007F:BB80 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 20 4 30 10 -1
   2: 0100007F:D431 0100007F:BB80 01 00000000:00000000 00:00000000 00000000  1001        0 3 1 0 20 4 30 10 -1
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:D500 0000000000000000FFFF00000100007F:BB80 01 00000000:00000000 00:00000000 00000000  1002        0 4 1 0 20 4 30 10 -1
`
	for _, c := range []struct {
		peer int
		want []int
	}{{0xD431, []int{1001}}, {0xD500, []int{1002}}, {0xD999, nil}} {
		got := peerUIDs([]string{tcp, tcp6}, c.peer, 0xBB80)
		if len(got) != len(c.want) || len(got) == 1 && got[0] != c.want[0] {
			t.Errorf("peer port %d: %v; want %v", c.peer, got, c.want)
		}
	}
}
