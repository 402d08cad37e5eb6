package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/resolver/cli/console"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/deployment/ssmparams"
	"github.com/toolgate/toolgate/shared/park"
	"github.com/toolgate/toolgate/shared/review"
)

// consoleOptions are toolgate review console's flags.
type consoleOptions struct {
	decisionOptions
	port    int
	noOpen  bool
	stage   string
	anyUser bool
}

// newReviewConsoleCmd is `toolgate review console`: the review console on
// 127.0.0.1 (docs/reviews.md, "The review console"). Exit 0 on SIGINT or
// SIGTERM, 1 when it cannot listen or find the function, 2 on misuse.
func (a *app) newReviewConsoleCmd() *cobra.Command {
	var o consoleOptions
	cmd := &cobra.Command{
		Use:   "console [--port P] [--no-open] [--any-local-user] (--stage S | --url URL | --endpoint URL --as NAME)",
		Short: "serve the review console on 127.0.0.1: read and decide reviews in the browser",
		Long: `Serves the review console on 127.0.0.1 only (the kubectl proxy pattern):
a page where each pending review is shown as its call will be sent, and
approved or rejected. Every request the page makes goes through this
command, which signs it with your own AWS identity and a fresh caller
proof, exactly as toolgate review does; no credential or proof reaches the
browser.

It prints one line, "review console: http://127.0.0.1:PORT/open?c=...",
whose link works once: it sets the console's session cookie. Without
--no-open it also opens that link with xdg-open or open, when found.

--stage S reads the review-decision Function URL from SSM
(` + deployment.ReviewDecisionURLParam("S") + `); --url names it (default
$` + EnvReviewURL + `); on the local stack, --endpoint names the function
under the Lambda RIE and --as NAME signs with NAME's local keys.

On Linux only connections of your own user are admitted;
--any-local-user admits any (a browser outside this machine's users, as
WSL 2's Windows browser through its localhost relay).

Serves until SIGINT or SIGTERM (exit 0); exit 1 when it cannot listen or
read the stage's parameter, 2 on misuse.`,
		RunE: func(cmd *cobra.Command, pos []string) error {
			return exit(a.reviewConsoleRun(cmd, pos, &o))
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.port, "port", 0, "listen on 127.0.0.1:`P` (0: a free port)")
	fs.BoolVar(&o.noOpen, "no-open", false, "print the link without opening a browser")
	fs.BoolVar(&o.anyUser, "any-local-user", false, "admit connections of any user of this machine (a browser outside it, as WSL 2's Windows browser)")
	fs.StringVar(&o.stage, "stage", "", "read the review-decision Function URL of stage `S` from SSM")
	fs.StringVar(&o.endpoint, "endpoint", "", "the review-decision function under the Lambda RIE (local stack): its `URL`")
	fs.StringVar(&o.url, "url", a.getenv(EnvReviewURL), "the review-decision Function `URL` (AWS; default $"+EnvReviewURL+")")
	fs.StringVar(&o.as, "as", "", "on the local stack only: sign the caller proof with `NAME`'s local keys")
	return cmd
}

// reviewConsoleRun runs toolgate review console.
func (a *app) reviewConsoleRun(cmd *cobra.Command, pos []string, o *consoleOptions) int {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	urlGiven := o.url != "" && o.url != a.getenv(EnvReviewURL)
	switch {
	case len(pos) != 0:
		return misuse(cmd, "console takes no arguments")
	case o.port < 0 || o.port > 65535:
		return misuse(cmd, "--port %d: give 0 (a free port) to 65535", o.port)
	case o.stage != "" && (o.endpoint != "" || urlGiven):
		return misuse(cmd, "--stage excludes --url and --endpoint")
	case o.stage != "" && deployment.CheckStage(o.stage) != nil:
		return misuse(cmd, "--stage %q: %v", o.stage, deployment.CheckStage(o.stage))
	}
	if o.stage != "" {
		if o.as != "" {
			return misuse(cmd, "--as is for the local stack: through the Function URL you are your IAM principal")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		u, err := a.stageDecisionURL(ctx, o.stage)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "toolgate review console: %v\n", err)
			return ExitErrors
		}
		o.url = u
	} else if exit, bad := a.decisionMisuse(cmd, "console", "review", []string{""}, &o.decisionOptions); bad {
		return exit
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.port)))
	if err != nil {
		fmt.Fprintf(stderr, "toolgate review console: listen: %v\n", err)
		return ExitErrors
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if !o.anyUser {
		ln = sameUserListener{Listener: ln, uid: os.Getuid(), log: log}
	}
	defer ln.Close()
	srv, err := console.New(console.Config{Backend: &consoleBackend{a: a, o: &o.decisionOptions, log: log},
		Port: ln.Addr().(*net.TCPAddr).Port, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "toolgate review console: %v\n", err)
		return ExitErrors
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	link := srv.OpenURL()
	fmt.Fprintf(stdout, "review console: %s\n", link)
	if f, ok := stdout.(interface{ Sync() error }); ok {
		f.Sync()
	}
	if !o.noOpen {
		openBrowser(link)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "toolgate review console: serve: %v\n", err)
		return ExitErrors
	case <-ctx.Done():
	case <-a.env.Stop:
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shut)
	return ExitOK
}

// sameUserListener admits, where the kernel says who owns a socket
// (Linux's /proc/net/tcp and tcp6, proc(5)), only the connections whose
// peer socket is owned by uid, the console's own user: 127.0.0.1 is
// shared by every user of the machine, and the capability can be read in
// the process list (docs/reviews.md, "Its security model"). A connection
// of another user, or whose peer cannot be found, is closed before any
// HTTP and logged by its peer address; without /proc/net/tcp (macOS)
// every connection is admitted.
type sameUserListener struct {
	net.Listener
	uid int
	log *slog.Logger
}

// Accept is the next admitted connection.
func (l sameUserListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admits(c) {
			return c, nil
		}
		if l.log != nil {
			l.log.Warn("console connection of another user refused", "peer", c.RemoteAddr().String())
		}
		c.Close()
	}
}

func (l sameUserListener) admits(c net.Conn) bool {
	var tables []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) && f == "/proc/net/tcp" {
			return true
		}
		if err == nil {
			tables = append(tables, string(b))
		}
	}
	peer, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return false
	}
	uids := peerUIDs(tables, peer.Port, local.Port)
	for _, u := range uids {
		if u != l.uid {
			return false
		}
	}
	return len(uids) > 0
}

// peerUIDs are the owners (the uid column) of the sockets in tables,
// /proc/net/tcp's format, whose local port is peerPort and remote port
// port: the peer side of a connection to the console. Every address is
// a loopback one, as the console listens on 127.0.0.1 only.
func peerUIDs(tables []string, peerPort, port int) []int {
	var out []int
	for _, t := range tables {
		for _, line := range strings.Split(t, "\n") {
			f := strings.Fields(line)
			if len(f) < 8 || hexPort(f[1]) != peerPort || hexPort(f[2]) != port {
				continue
			}
			if uid, err := strconv.Atoi(f[7]); err == nil {
				out = append(out, uid)
			}
		}
	}
	return out
}

// hexPort is the port of a /proc/net/tcp address ("0100007F:1F90"), -1
// when there is none.
func hexPort(addr string) int {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return -1
	}
	return int(p)
}

// stageDecisionURL reads the review-decision Function URL of stage from
// SSM, as publish reads /toolgate/<stage>/ parameters.
func (a *app) stageDecisionURL(ctx context.Context, stage string) (string, error) {
	cfg, err := a.loadAWSConfig(ctx)
	if err != nil {
		return "", err
	}
	u, err := ssmparams.Params{Client: ssm.NewFromConfig(cfg)}.Get(ctx, deployment.ReviewDecisionURLParam(stage))
	if err != nil {
		return "", fmt.Errorf("the review-decision Function URL of stage %s: %w", stage, err)
	}
	return u, nil
}

// openBrowser opens link with xdg-open (Linux) or open (macOS) when
// found; a failure is not an error: the link is printed.
func openBrowser(link string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return
	}
	c := exec.Command(path, link)
	if c.Start() == nil {
		go c.Wait()
	}
}

// consoleBackend is console.Backend through review-decision: each request
// signed with a fresh caller proof by the reviewer's identity (o's
// transport), as toolgate review and toolgate parked sign theirs.
type consoleBackend struct {
	a   *app
	o   *decisionOptions
	log *slog.Logger
}

// perRequest bounds one request of the console to review-decision.
const perRequest = time.Minute

func (b *consoleBackend) transport(ctx context.Context) decisionCaller {
	return func(req review.DirectRequest) ([]byte, string, string, error) {
		if b.o.endpoint != "" {
			return b.a.callDecisionRIE(ctx, b.o.endpoint, req)
		}
		if req.Action == review.ActionParkList || req.Action == review.ActionParkShow || req.Action == review.ActionParkDecide {
			return b.a.callParkURL(ctx, b.o.url, req)
		}
		return b.a.callDecisionURL(ctx, b.o.url, req)
	}
}

// answer turns a call's outcome into out or an error: a refusal as
// *console.Refusal, a failure logged here (never a proof: none is in it)
// and returned.
func (b *consoleBackend) answer(what string, out []byte, code, msg string, err error, v any) error {
	switch {
	case err != nil:
		b.log.Warn("review-decision call failed", "call", what, "err", err)
		return err
	case code != "":
		return &console.Refusal{Code: code, Message: msg}
	}
	if err := json.Unmarshal(out, v); err != nil {
		b.log.Warn("review-decision answered unexpectedly", "call", what)
		return errors.New("unexpected answer from review-decision")
	}
	return nil
}

// signed signs req with a fresh caller proof bound to bind and sends it.
func (b *consoleBackend) signed(ctx context.Context, bind caller.Binding, req review.DirectRequest) ([]byte, string, string, error) {
	p, err := b.a.newProver(ctx, b.o.as)
	if err != nil {
		return nil, "", "", err
	}
	if req.Proof, err = p.sign(ctx, bind); err != nil {
		return nil, "", "", err
	}
	return b.transport(ctx)(req)
}

// call is one signed call of review-decision, within perRequest, for
// the Backend method what: its JSON answer decoded into a T, or the error
// answer gives.
func call[T any](ctx context.Context, b *consoleBackend, what string, bind caller.Binding, req review.DirectRequest) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, perRequest)
	defer cancel()
	var v T
	out, code, msg, err := b.signed(ctx, bind, req)
	return v, b.answer(what, out, code, msg, err, &v)
}

// List implements console.Backend.
func (b *consoleBackend) List(ctx context.Context, status string) (review.ListResult, error) {
	return call[review.ListResult](ctx, b, "list", caller.Binding{Action: caller.ActionList, Target: status}, review.DirectRequest{Action: review.ActionList, Status: status})
}

// Show implements console.Backend.
func (b *consoleBackend) Show(ctx context.Context, id string) (review.View, error) {
	return call[review.View](ctx, b, "show", caller.Binding{Action: caller.ActionShow, Target: id}, review.DirectRequest{Action: review.ActionShow, ReviewID: id})
}

// Decide implements console.Backend: bound to digest, the digest the
// page showed, never to one read again now.
func (b *consoleBackend) Decide(ctx context.Context, id string, verdict review.Verdict, digest, reason string, answer, edits json.RawMessage) (review.DecideResult, error) {
	bind, err := review.DecideBinding(id, verdict, digest, answer, edits)
	if err != nil {
		return review.DecideResult{}, err
	}
	req := review.DirectRequest{Action: review.ActionDecide, ReviewID: id, Decision: verdict, Reason: reason, Answer: answer, Edits: edits}
	return call[review.DecideResult](ctx, b, "decide", bind, req)
}

// ParkList implements console.Backend.
func (b *consoleBackend) ParkList(ctx context.Context, status string) (park.ListResult, error) {
	return call[park.ListResult](ctx, b, "park list", review.ParkListBinding(status), review.DirectRequest{Action: review.ActionParkList, Status: status})
}

// ParkShow implements console.Backend.
func (b *consoleBackend) ParkShow(ctx context.Context, id string) (park.View, error) {
	return call[park.View](ctx, b, "park show", review.ParkShowBinding(id), review.DirectRequest{Action: review.ActionParkShow, ParkID: id})
}

// ParkDecide implements console.Backend: bound to digest, the current
// definition's digest the page showed, never to one read again now (as
// toolgate parked reads it), so that a definition changed again after the
// page was rendered is refused rather than approved unseen.
func (b *consoleBackend) ParkDecide(ctx context.Context, id, decision, digest, reason string) (park.DecideResult, error) {
	if !park.IDPattern.MatchString(id) {
		return park.DecideResult{}, &console.Refusal{Code: string(review.CodeInvalid), Message: "not a park id"}
	}
	req := review.DirectRequest{Action: review.ActionParkDecide, ParkID: id, Decision: review.Verdict(decision), Reason: reason}
	return call[park.DecideResult](ctx, b, "park decide", review.ParkDecideBinding(id, decision, digest), req)
}
