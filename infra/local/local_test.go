package local_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	sestypes "github.com/aws/aws-sdk-go-v2/service/sesv2/types"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/localtest"
)

const echoPkg = "./testdata/echo"

// The test binary's own environment must not reach a stand-in.
func init() { os.Setenv("TOOLGATE_LOCAL_LEAK_CHECK", "leaked") }

// awsConfig is an SDK configuration with static fake credentials; clients
// point it at a stand-in with BaseEndpoint.
func awsConfig(t *testing.T) aws.Config {
	t.Helper()
	cfg, err := config.LoadDefaultConfig(t.Context(),
		config.WithRegion(local.Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRoot(t *testing.T) {
	root, err := local.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "package.json", "Makefile"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("root %s: %v", root, err)
		}
	}
	t.Chdir("testdata/echo")
	if got, err := local.Root(); err != nil || got != root {
		t.Errorf("Root() from testdata/echo = %q, %v; want %q", got, err, root)
	}
}

func TestFreePort(t *testing.T) {
	seen := map[int]bool{}
	for range 5 {
		port, err := local.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port <= 0 || port > 65535 {
			t.Fatalf("FreePort() = %d", port)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		l.Close()
		seen[port] = true
	}
	if len(seen) < 2 {
		t.Errorf("FreePort returned the same port five times: %v", seen)
	}
}

// fakeRoot makes a directory that Root() finds (it has a go.mod) and moves
// the test into it.
func fakeRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/fake\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	return dir
}

func TestMissingDepsSayRunMakeDeps(t *testing.T) {
	bootstrap := localtest.Bootstrap(t, echoPkg) // before leaving the package directory
	fakeRoot(t)
	starts := map[string]func() (*local.Process, error){
		"dynalite": func() (*local.Process, error) { return local.StartDynalite(t.Context()) },
		"ses":      func() (*local.Process, error) { return local.StartSES(t.Context()) },
		"rie": func() (*local.Process, error) {
			return local.StartRIE(t.Context(), "echo", bootstrap, time.Second, nil)
		},
	}
	for name, start := range starts {
		p, err := start()
		if err == nil {
			p.Stop()
			t.Errorf("%s started without its dependencies", name)
			continue
		}
		if !strings.Contains(err.Error(), "run make deps") {
			t.Errorf("%s: error does not say to run make deps: %v", name, err)
		}
	}
}

func TestStartFailureShowsStderr(t *testing.T) {
	root := fakeRoot(t)
	cli := filepath.Join(root, "node_modules", "dynalite", "cli.js")
	if err := os.MkdirAll(filepath.Dir(cli), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `for (let i = 0; i < 50; i++) console.error("noise " + i);
console.error("fatal: the stand-in cannot start");
process.exit(3);
`
	if err := os.WriteFile(cli, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	p, err := local.StartDynalite(t.Context())
	if err == nil {
		p.Stop()
		t.Fatal("a stand-in that exits at once started")
	}
	msg := err.Error()
	for _, want := range []string{"exited before it was ready", "exit status 3", "fatal: the stand-in cannot start", "noise 49"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "noise 0\n") {
		t.Errorf("error holds the whole stderr, not its last lines:\n%s", msg)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("failure took %v to report", d)
	}
}

func TestDynalite(t *testing.T) {
	t.Parallel()
	p := localtest.Dynalite(t)
	t.Logf("dynalite pid %d on %s ready in %v", p.PID, p.Addr, p.Startup)
	checkLoopbackOnly(t, p)

	ctx := t.Context()
	db := dynamodb.NewFromConfig(awsConfig(t), func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.Endpoint()) })
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("ledger"),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("ledger")})
	if err != nil {
		t.Fatal(err)
	}
	if s := desc.Table.TableStatus; s != ddbtypes.TableStatusActive {
		t.Errorf("table status %s right after CreateTable with --createTableMs 0", s)
	}

	put := func(v string) error {
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String("ledger"),
			Item: map[string]ddbtypes.AttributeValue{
				"pk": &ddbtypes.AttributeValueMemberS{Value: "call#1"},
				"v":  &ddbtypes.AttributeValueMemberS{Value: v},
			},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		return err
	}
	if err := put("first"); err != nil {
		t.Fatalf("first conditional put: %v", err)
	}
	err = put("second")
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second conditional put: got %v (%T), want ConditionalCheckFailedException", err, err)
	}
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String("ledger"),
		Key:            map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "call#1"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Item["v"].(*ddbtypes.AttributeValueMemberS); !ok || v.Value != "first" {
		t.Errorf("item after the refused put: %#v", got.Item)
	}
}

func TestSES(t *testing.T) {
	t.Parallel()
	p := localtest.SES(t)
	t.Logf("ses pid %d on %s ready in %v", p.PID, p.Addr, p.Startup)
	checkLoopbackOnly(t, p)

	ses := sesv2.NewFromConfig(awsConfig(t), func(o *sesv2.Options) { o.BaseEndpoint = aws.String(p.Endpoint()) })
	out, err := ses.SendEmail(t.Context(), &sesv2.SendEmailInput{
		FromEmailAddress: aws.String("toolgate@example.com"),
		Destination:      &sestypes.Destination{ToAddresses: []string{"reviewer@example.com"}},
		Content: &sestypes.EmailContent{Simple: &sestypes.Message{
			Subject: &sestypes.Content{Data: aws.String("Review needed")},
			Body:    &sestypes.Body{Text: &sestypes.Content{Data: aws.String("Please approve step 3.")}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.MessageId) == "" {
		t.Error("SendEmail returned no MessageId")
	}

	var store struct {
		Emails []struct {
			MessageID   string `json:"messageId"`
			From        string `json:"from"`
			Destination struct {
				To []string `json:"to"`
			} `json:"destination"`
			Subject string `json:"subject"`
			Body    struct {
				Text string `json:"text"`
			} `json:"body"`
		} `json:"emails"`
	}
	getJSON(t, p.Endpoint()+"/store", &store)
	if len(store.Emails) != 1 {
		t.Fatalf("store holds %d emails, want 1: %+v", len(store.Emails), store)
	}
	e := store.Emails[0]
	if e.MessageID != aws.ToString(out.MessageId) || e.From != "toolgate@example.com" ||
		len(e.Destination.To) != 1 || e.Destination.To[0] != "reviewer@example.com" ||
		e.Subject != "Review needed" || e.Body.Text != "Please approve step 3." {
		t.Errorf("stored email %+v does not match the one sent (MessageId %s)", e, aws.ToString(out.MessageId))
	}
}

func TestRIE(t *testing.T) {
	t.Parallel()
	began := time.Now()
	bootstrap := localtest.Bootstrap(t, echoPkg)
	t.Logf("built %s in %v", echoPkg, time.Since(began))

	p := localtest.RIE(t, "echo", bootstrap, 2500*time.Millisecond, map[string]string{"ECHO_EXTRA": "extra value"})
	t.Logf("rie pid %d on %s (runtime API %s) ready in %v", p.PID, p.Addr, p.RuntimeAPIAddr, p.Startup)
	if p.RuntimeAPIAddr == "" || p.RuntimeAPIAddr == p.Addr {
		t.Errorf("runtime API address %q vs emulator address %q", p.RuntimeAPIAddr, p.Addr)
	}
	if want := "http://" + p.Addr + "/2015-03-31/functions/function/invocations"; p.InvokeURL() != want {
		t.Errorf("InvokeURL() = %q, want %q", p.InvokeURL(), want)
	}

	// The first invocation starts the bootstrap (cold start).
	began = time.Now()
	status, hdr, body := invoke(t, p, `{"tool":"http","args":{"n":1,"tags":["a","b"]}}`)
	t.Logf("cold invoke %v", time.Since(began))
	if status != http.StatusOK || !jsonEqual(body, `{"tool":"http","args":{"n":1,"tags":["a","b"]}}`) {
		t.Errorf("echo: %d %s", status, body)
	}
	began = time.Now()
	_, _, body = invoke(t, p, `"just a string"`)
	t.Logf("warm invoke %v", time.Since(began))
	if !jsonEqual(body, `"just a string"`) {
		t.Errorf("echo of a string: %s", body)
	}

	status, hdr, body = invoke(t, p, `{"fail":"tool refused"}`)
	var fe struct {
		ErrorType    *string `json:"errorType"`
		ErrorMessage *string `json:"errorMessage"`
	}
	if err := json.Unmarshal(body, &fe); err != nil || fe.ErrorType == nil || fe.ErrorMessage == nil {
		t.Fatalf("error shape: %d %s (%v)", status, body, err)
	}
	if *fe.ErrorType != "EchoError" || *fe.ErrorMessage != "tool refused" {
		t.Errorf("error: %s", body)
	}
	// As LOCAL.md says: 200 and no X-Amz-Function-Error header (unlike AWS).
	t.Logf("handler error: HTTP %d, X-Amz-Function-Error %q, body %s", status, hdr.Get("X-Amz-Function-Error"), body)

	_, _, body = invoke(t, p, `{"getenv":["AWS_LAMBDA_FUNCTION_NAME","AWS_LAMBDA_FUNCTION_MEMORY_SIZE","AWS_LAMBDA_FUNCTION_TIMEOUT",`+
		`"AWS_REGION","AWS_ACCESS_KEY_ID","AWS_SECRET_ACCESS_KEY","AWS_SESSION_TOKEN","ECHO_EXTRA","TOOLGATE_LOCAL_LEAK_CHECK","AWS_LAMBDA_RUNTIME_API","GOMAXPROCS"]}`)
	var got struct {
		Env map[string]*string `json:"env"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("getenv: %s: %v", body, err)
	}
	want := map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        "echo",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "128",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     "3",
		"AWS_REGION":                      "us-east-1",
		"AWS_ACCESS_KEY_ID":               "AKIDLOCAL",
		"AWS_SECRET_ACCESS_KEY":           "secretlocal",
		"ECHO_EXTRA":                      "extra value",
		"AWS_LAMBDA_RUNTIME_API":          p.RuntimeAPIAddr,
		"GOMAXPROCS":                      "1",
	}
	for k, v := range want {
		if g := got.Env[k]; g == nil || *g != v {
			t.Errorf("function env %s = %v, want %q", k, deref(g), v)
		}
	}
	for _, k := range []string{"AWS_SESSION_TOKEN", "TOOLGATE_LOCAL_LEAK_CHECK"} {
		if g := got.Env[k]; g != nil && *g != "" {
			t.Errorf("function env %s = %q leaked in", k, *g)
		}
	}
	checkLoopbackOnly(t, p)
}

// TestRIETimeout shows how the RIE reports a function that outlives its
// timeout: HTTP 200 with a plain-text body (not the JSON error AWS returns,
// {"errorType":"Sandbox.Timedout",...}), then a fresh runtime for the next
// invocation.
func TestRIETimeout(t *testing.T) {
	t.Parallel()
	p := localtest.RIE(t, "slow", localtest.Bootstrap(t, echoPkg), time.Second, nil)
	began := time.Now()
	status, _, body := invoke(t, p, `{"sleep_ms":3000}`)
	took := time.Since(began)
	if status != http.StatusOK || string(body) != "Task timed out after 1.00 seconds" {
		t.Errorf("timed-out invoke: %d %q", status, body)
	}
	if took < time.Second || took > 2500*time.Millisecond {
		t.Errorf("timed-out invoke returned after %v, want about 1s", took)
	}
	if _, _, body := invoke(t, p, `{"after":"timeout"}`); !jsonEqual(body, `{"after":"timeout"}`) {
		t.Errorf("invoke after a timeout: %s", body)
	}
}

// TestRIESideBySide runs two emulators at once, each with its own pair of
// ports, and invokes both concurrently.
func TestRIESideBySide(t *testing.T) {
	t.Parallel()
	bootstrap := localtest.Bootstrap(t, echoPkg)
	a := localtest.RIE(t, "a", bootstrap, 0, nil)
	b := localtest.RIE(t, "b", bootstrap, 0, nil)
	addrs := map[string]bool{a.Addr: true, a.RuntimeAPIAddr: true, b.Addr: true, b.RuntimeAPIAddr: true}
	if len(addrs) != 4 {
		t.Fatalf("ports are not distinct: %v", addrs)
	}
	var wg sync.WaitGroup
	for i, p := range []*local.Process{a, b} {
		wg.Go(func() {
			in := fmt.Sprintf(`{"i":%d}`, i)
			if _, _, body := invoke(t, p, in); !jsonEqual(body, in) {
				t.Errorf("%s: %s", p.Name, body)
			}
		})
	}
	wg.Wait()
}

func TestStopEndsTheProcess(t *testing.T) {
	t.Parallel()
	bootstrap := localtest.Bootstrap(t, echoPkg)
	starts := map[string]func(ctx context.Context) (*local.Process, error){
		"dynalite": local.StartDynalite,
		"ses":      local.StartSES,
		"rie": func(ctx context.Context) (*local.Process, error) {
			return local.StartRIE(ctx, "stop", bootstrap, time.Second, nil)
		},
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := start(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var group []int
			if name == "rie" {
				invoke(t, p, `{}`) // the bootstrap now runs, in a process group of its own
				group = tree(p.PID)
				if len(group) < 2 {
					t.Errorf("after an invoke the RIE has no bootstrap child: %v", group)
				}
			}
			began := time.Now()
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s stopped in %v", name, time.Since(began))
			if err := p.Stop(); err != nil {
				t.Errorf("second Stop: %v", err)
			}
			select {
			case <-p.Done():
			default:
				t.Error("Done not closed after Stop")
			}
			if c, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still answers after Stop", p.Addr)
			}
			if p.RuntimeAPIAddr != "" {
				if c, err := net.DialTimeout("tcp", p.RuntimeAPIAddr, time.Second); err == nil {
					c.Close()
					t.Errorf("runtime API %s still answers after Stop", p.RuntimeAPIAddr)
				}
			}
			for _, pid := range append([]int{p.PID}, group...) {
				if procAlive(pid) {
					t.Errorf("pid %d still alive after Stop", pid)
				}
			}
		})
	}
}

func TestCancelStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	p, err := local.StartDynalite(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	cancel()
	select {
	case <-p.Done():
	case <-time.After(local.StopGrace + time.Second):
		t.Fatal("cancelling the start context did not stop the process")
	}
}

// TestCrashLeavesNoStandIns runs this test binary again as a helper that
// starts stand-ins and exits without stopping them (as a panic or a -timeout
// would): the stand-ins must not outlive it.
func TestCrashLeavesNoStandIns(t *testing.T) {
	if os.Getenv("LOCAL_CRASH_HELPER") == "1" {
		crashHelper()
		return
	}
	t.Parallel()
	bootstrap := localtest.Bootstrap(t, echoPkg)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCrashLeavesNoStandIns$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCAL_CRASH_HELPER=1", "LOCAL_CRASH_BOOTSTRAP="+bootstrap)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var report struct {
		PIDs  []int
		Addrs []string
	}
	if err := json.Unmarshal(bytes.TrimSpace(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]), &report); err != nil {
		t.Fatalf("helper output: %v\n%s", err, out)
	}
	if len(report.PIDs) < 3 {
		t.Fatalf("helper started too few processes: %+v", report)
	}
	deadline := time.Now().Add(local.StopGrace)
	for {
		var left []string
		for _, pid := range report.PIDs {
			if procAlive(pid) {
				left = append(left, fmt.Sprintf("pid %d", pid))
			}
		}
		for _, a := range report.Addrs {
			if c, err := net.DialTimeout("tcp", a, 100*time.Millisecond); err == nil {
				c.Close()
				left = append(left, a)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range report.PIDs {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("still alive after the helper died: %v", left)
		}
		time.Sleep(20 * time.Millisecond) // a poll with a deadline: real processes end on their own time
	}
}

func crashHelper() {
	ctx := context.Background()
	var pids []int
	var addrs []string
	d, err := local.StartDynalite(ctx)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	r, err := local.StartRIE(ctx, "crash", os.Getenv("LOCAL_CRASH_BOOTSTRAP"), time.Second, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	resp, err := http.Post(r.InvokeURL(), "application/json", strings.NewReader("{}"))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	resp.Body.Close()
	pids = append(append(pids, tree(d.PID)...), tree(r.PID)...)
	addrs = append(addrs, d.Addr, r.Addr, r.RuntimeAPIAddr)
	b, _ := json.Marshal(map[string]any{"PIDs": pids, "Addrs": addrs})
	fmt.Printf("\n%s\n", b)
	os.Exit(7)
}

func invoke(t *testing.T, p *local.Process, payload string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.InvokeURL(), strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("invoke %s: %v", p.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
}

func jsonEqual(got []byte, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// --- /proc helpers (Linux): who listens where ---

type stat struct {
	pid, ppid int
	state     string
}

func procStats() []stat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []stat
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		out = append(out, stat{pid, ppid, f[0]})
	}
	return out
}

// tree returns pid and its live descendants.
func tree(pid int) []int {
	stats := procStats()
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		for _, s := range stats {
			if s.ppid == out[i] && s.state != "Z" {
				out = append(out, s.pid)
			}
		}
	}
	return out
}

func procAlive(pid int) bool {
	for _, s := range procStats() {
		if s.pid == pid {
			return s.state != "Z" && s.state != "X"
		}
	}
	return false
}

// checkLoopbackOnly fails t unless every TCP socket that p (or a descendant)
// listens on is bound to 127.0.0.1, and p listens on p.Addr.
func checkLoopbackOnly(t *testing.T, p *local.Process) {
	t.Helper()
	inodes := map[string]bool{}
	for _, pid := range tree(p.PID) {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
	}
	var listening []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			listening = append(listening, procAddr(f[1]))
		}
	}
	if len(listening) == 0 {
		t.Fatalf("%s (pid %d) listens on nothing", p.Name, p.PID)
	}
	found := false
	for _, a := range listening {
		host, _, _ := net.SplitHostPort(a)
		if host != "127.0.0.1" {
			t.Errorf("%s listens on %s, not on 127.0.0.1", p.Name, a)
		}
		found = found || a == p.Addr
	}
	if !found {
		t.Errorf("%s listens on %v but not on %s", p.Name, listening, p.Addr)
	}
	t.Logf("%s listens on %v", p.Name, listening)
}

// procAddr decodes /proc/net/tcp's "0100007F:1F90" (words in host order,
// little-endian here) to "127.0.0.1:8080".
func procAddr(s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	raw, _ := hex.DecodeString(hexIP)
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	return net.JoinHostPort(net.IP(raw).String(), strconv.Itoa(int(port)))
}
