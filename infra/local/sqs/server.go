package sqs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/infra/local"
)

const (
	// launcher is the stand-in's entry, from the repository root.
	launcher = "infra/local/sqs/server.mjs"
	// library is what `make deps` installs for it (package-lock.json).
	library = "node_modules/local-aws-sqs/package.json"
)

// Server is a running SQS stand-in: npm local-aws-sqs 2.0.2 under node
// (server.mjs beside this file) on a free 127.0.0.1 port, its queues and
// messages in memory. Queue URLs are Endpoint()+"/"+local.LocalAccountID+
// "/"+name, queue ARNs "arn:aws:sqs:"+local.Region+":"+local.LocalAccountID+
// ":"+name.
type Server struct {
	p *local.Process
}

// Start starts the SQS stand-in and waits until it answers ListQueues
// (at most local.StartTimeout). ctx bounds the start; when ctx is done
// later, the stand-in is stopped. Its ChangeMessageVisibility is
// corrected to count no receive (doc.go); an error names what is missing
// (node, or node_modules: run make deps).
func Start(ctx context.Context) (*Server, error) {
	return start(ctx, false)
}

// start starts the stand-in; asPublished loads the library without the
// launcher's correction (for the tests that measure it).
func start(ctx context.Context, asPublished bool) (*Server, error) {
	root, err := local.Root()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, library)); err != nil {
		return nil, fmt.Errorf("local: sqs: %s is missing: run make deps", filepath.Join(root, filepath.Dir(library)))
	}
	p, err := local.StartNode(ctx, "sqs", launcher, ready, func(port int) []string {
		args := []string{strconv.Itoa(port), local.Region, local.LocalAccountID}
		if asPublished {
			args = append(args, "--as-published")
		}
		return args
	})
	if err != nil {
		return nil, err
	}
	return &Server{p: p}, nil
}

// StartForTest starts a Server for t, stopped by t.Cleanup; it fails t
// (never skips it) when the stand-in cannot start.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	return startedForTest(t, false)
}

func startedForTest(t testing.TB, asPublished bool) *Server {
	t.Helper()
	s, err := start(t.Context(), asPublished)
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

// ready is the stand-in's readiness check: ListQueues answers 200.
func ready(ctx context.Context, p *local.Process) error {
	return local.JSONReady(ctx, p, "AmazonSQS.ListQueues")
}

// Endpoint is the stand-in's base URL, "http://127.0.0.1:PORT": an SDK
// client's BaseEndpoint, or a function's AWS_ENDPOINT_URL_SQS.
func (s *Server) Endpoint() string { return s.p.Endpoint() }

// Process is the node process serving the stand-in (its PID, its last
// lines of output).
func (s *Server) Process() *local.Process { return s.p }

// Stop ends the stand-in by its PID (local.Process.Stop: SIGTERM, then
// SIGKILL after local.StopGrace); its queues and messages are gone. It is
// idempotent.
func (s *Server) Stop() error { return s.p.Stop() }

// Client returns an SQS client of the stand-in (Client(Endpoint())).
func (s *Server) Client(opts ...func(*awssqs.Options)) *awssqs.Client {
	return Client(s.Endpoint(), opts...)
}

// CreateQueue creates a queue on the stand-in (CreateQueue with
// Client()).
func (s *Server) CreateQueue(ctx context.Context, name string, o QueueOptions) (Queue, error) {
	return CreateQueue(ctx, s.Client(), name, o)
}

// Client returns an SQS client for a local stand-in at endpoint, with the
// stand-ins' region (local.Region) and fake static credentials
// (local.FakeAccessKeyID), as local.DynamoDB does for dynalite; opts
// adjust it further.
func Client(endpoint string, opts ...func(*awssqs.Options)) *awssqs.Client {
	return awssqs.New(awssqs.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       local.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(local.FakeAccessKeyID, local.FakeSecretAccessKey, ""),
	}, opts...)
}
