// Package kms serves local-kms (github.com/nsmithuk/local-kms), an
// implementation of the KMS wire API, in-process on a free 127.0.0.1 port,
// with one symmetric key created at start for a stage's credentials
// (docs/credentials.md, "On the local stack").
//
// local-kms is imported as a library rather than run as its own binary,
// which binds every interface and dereferences nil when its port is taken.
// Its request handlers are called here with a logger of this package's
// own, so its log of every operation goes where Options.Log says (nowhere
// by default), not to the test's or the stack's standard error. Those log
// lines name operations and key ARNs; the one that would quote a
// plaintext (Encrypt of more than 4096 bytes) belongs to an operation
// toolgate never sends a secret to: credentials are sealed locally under a
// data key from GenerateDataKey (shared/credential).
package kms

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awskms "github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/nsmithuk/local-kms/src/config"
	"github.com/nsmithuk/local-kms/src/data"
	"github.com/nsmithuk/local-kms/src/handler"
	"github.com/sirupsen/logrus"

	"github.com/toolgate/toolgate/infra/local"
)

// Alias is the alias of a stage's credentials key, the same locally as the
// CDK app's on AWS: "alias/toolgate-<stage>-credentials".
func Alias(stage string) string { return "alias/toolgate-" + stage + "-credentials" }

// Options configure Start.
type Options struct {
	// Stage names the key's alias (Alias); required.
	Stage string
	// Log receives local-kms's own log lines (one per operation: its name
	// and the key ARN); nil discards them.
	Log io.Writer
}

// Server is local-kms serving one stage's credentials key.
type Server struct {
	// KeyARN is the key created at start ("arn:aws:kms:<local.Region>:
	// <local.LocalAccountID>:key/<uuid>"), a symmetric
	// SYMMETRIC_DEFAULT ENCRYPT_DECRYPT key with rotation enabled.
	KeyARN string
	// Alias is the key's alias (Alias(Options.Stage)).
	Alias string

	addr   string
	dir    string
	db     *data.Database
	srv    *http.Server
	logger *logrus.Logger

	mu    sync.Mutex
	calls map[string]int

	stopOnce sync.Once
	stopErr  error
}

// configOnce sets local-kms's process-wide configuration, the same for
// every Server: the local stack's account and region (key ARNs are
// built from them).
var configOnce sync.Once

// operations are the KMS actions served: those toolgate and its tests call.
// Anything else is answered 501, as local-kms answers an unknown action.
var operations = map[string]func(*handler.RequestHandler) handler.Response{
	"CreateKey":            (*handler.RequestHandler).CreateKey,
	"CreateAlias":          (*handler.RequestHandler).CreateAlias,
	"DescribeKey":          (*handler.RequestHandler).DescribeKey,
	"ListAliases":          (*handler.RequestHandler).ListAliases,
	"EnableKeyRotation":    (*handler.RequestHandler).EnableKeyRotation,
	"GetKeyRotationStatus": (*handler.RequestHandler).GetKeyRotationStatus,
	"GenerateDataKey":      (*handler.RequestHandler).GenerateDataKey,
	"Encrypt":              (*handler.RequestHandler).Encrypt,
	"Decrypt":              (*handler.RequestHandler).Decrypt,
	"DisableKey":           (*handler.RequestHandler).DisableKey,
	"EnableKey":            (*handler.RequestHandler).EnableKey,
}

// Start serves local-kms on a free 127.0.0.1 port over a database in a new
// temporary directory, and creates the stage's key: CreateKey (symmetric),
// CreateAlias Alias(o.Stage), EnableKeyRotation. ctx bounds the key's
// creation only; Stop ends the server and removes the directory. An error
// leaves nothing running.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if o.Stage == "" {
		return nil, errors.New("local kms: empty stage")
	}
	configOnce.Do(func() {
		config.AWSAccountId = local.LocalAccountID
		config.AWSRegion = local.Region
	})
	s := &Server{Alias: Alias(o.Stage), calls: map[string]int{}, logger: logrus.New()}
	s.logger.SetOutput(io.Discard)
	if o.Log != nil {
		s.logger.SetOutput(o.Log)
	}
	if s.dir, err = os.MkdirTemp("", "toolgate-kms-"); err != nil {
		return nil, fmt.Errorf("local kms: %w", err)
	}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if s.db, err = openDatabase(s.dir); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("local kms: %w", err)
	}
	s.addr = l.Addr().String()
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(l)

	c := s.Client()
	key, err := c.CreateKey(ctx, &awskms.CreateKeyInput{
		Description: aws.String("toolgate " + o.Stage + " credentials (local)"),
		KeySpec:     types.KeySpecSymmetricDefault,
		KeyUsage:    types.KeyUsageTypeEncryptDecrypt,
	})
	if err != nil {
		return nil, fmt.Errorf("local kms: create key: %w", err)
	}
	s.KeyARN = aws.ToString(key.KeyMetadata.Arn)
	if _, err := c.CreateAlias(ctx, &awskms.CreateAliasInput{AliasName: aws.String(s.Alias), TargetKeyId: aws.String(s.KeyARN)}); err != nil {
		return nil, fmt.Errorf("local kms: create alias: %w", err)
	}
	if _, err := c.EnableKeyRotation(ctx, &awskms.EnableKeyRotationInput{KeyId: aws.String(s.KeyARN)}); err != nil {
		return nil, fmt.Errorf("local kms: enable key rotation: %w", err)
	}
	return s, nil
}

// StartForTest starts a Server for t (Options{Stage: stage}), stopped by
// t.Cleanup; it fails t when the server cannot start.
func StartForTest(t testing.TB, stage string) *Server {
	t.Helper()
	s, err := Start(t.Context(), Options{Stage: stage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// openDatabase opens local-kms's leveldb database in dir; data.NewDatabase
// panics when it cannot.
func openDatabase(dir string) (db *data.Database, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("local kms: open database: %v", r)
		}
	}()
	return data.NewDatabase(dir), nil
}

// Endpoint is the server's base URL, "http://127.0.0.1:PORT": the
// BaseEndpoint of an SDK client (AWS_ENDPOINT_URL_KMS).
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Client returns a KMS client of the server, with the stand-ins' region
// and fake static credentials (local.FakeAccessKeyID).
func (s *Server) Client() *awskms.Client {
	return awskms.New(awskms.Options{
		BaseEndpoint: aws.String(s.Endpoint()),
		Region:       local.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, ""),
	})
}

// Calls returns how many requests of the KMS action op ("Decrypt",
// "GenerateDataKey", ...) the server has answered, successful or not.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Stop ends the server, closes the database and removes its directory.
// It is idempotent; every call returns the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		var errs []error
		if s.srv != nil {
			errs = append(errs, s.srv.Close())
		}
		if s.db != nil {
			s.db.Close()
		}
		if s.dir != "" {
			errs = append(errs, os.RemoveAll(s.dir))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// serve answers one request as local-kms's own HandleRequest does (POST /
// with a JSON body and X-Amz-Target TrentService.<Action>), but only for
// operations, and with the server's logger.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path != "/":
		http.Error(w, "Page not found", http.StatusNotFound)
		return
	case r.Method != http.MethodPost:
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	case !strings.Contains(r.Header.Get("Content-Type"), "json"):
		http.Error(w, "Only JSON based content types accepted", http.StatusUnsupportedMediaType)
		return
	}
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	call, ok := operations[op]
	if !ok {
		http.Error(w, "X-Amz-Target is not implemented", http.StatusNotImplemented)
		return
	}
	s.mu.Lock()
	s.calls[op]++
	s.mu.Unlock()
	resp := call(handler.NewRequestHandler(r, s.logger, s.db))
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(resp.Code)
	io.WriteString(w, resp.Body)
}
