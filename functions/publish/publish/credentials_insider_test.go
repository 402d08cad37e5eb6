package publish

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/publishapi"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// A set's caller proof binds the secret's HMAC under a salt the caller
// draws and nothing stores (CredentialSetDigest), and the publish function
// records every accepted proof's binding value in the ledger table (kind
// proof, attribute "binding"): whoever reads the table (an operator)
// cannot test guesses of a guessable secret against it, nor find the salt
// (docs/credentials.md, "Storing").
func TestAProofRecordDoesNotLetATableReaderGuessTheSecret(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	const weak = "Summer2026"
	r := publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Origin: "https://api.example.com", Secret: []byte(weak)}
	if _, code, msg := e.set(t, admin, r); code != "" {
		t.Fatalf("set: %s %s", code, msg)
	}
	// The operator: scans the table, and tries a dictionary against every
	// proof's binding.
	out, err := e.db.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil {
		t.Fatal(err)
	}
	dictionary := []string{"password", "letmein", "Winter2026", "Summer2026", "hunter2"}
	for _, it := range out.Items {
		b, ok := it["binding"].(*types.AttributeValueMemberS)
		if !ok {
			continue
		}
		for _, guess := range dictionary {
			g := r
			g.Secret = []byte(guess)
			if publishapi.CredentialSetBinding(g).Value() == b.Value {
				t.Errorf("the ledger's proof record confirms the guess %q of the credential", guess)
			}
		}
	}
}

// The run scope is "run:<execution name>", without the state machine,
// while the start-record seal is checked for the ARN the set names: a set
// naming ARN2, another state machine's execution of the same name N that
// has not started, does not replace the item of scope run:N once run
// ARN1 (name N) has started, even by its setter.
func TestAStartedRunsScopeIsNotRewrittenThroughAnotherStateMachinesARN(t *testing.T) {
	e := newCredEnv(t)
	e.registerWebhooks(t, "")
	const arn1 = "arn:aws:states:eu-west-1:000000000000:execution:toolgate-test_digest:run-n"
	const arn2 = "arn:aws:states:eu-west-1:000000000000:execution:other-machine:run-n"
	set := func(run string) (string, string) {
		_, code, msg := e.set(t, alice, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Run: run, Secret: []byte(secret)})
		return code, msg
	}
	if code, msg := set(arn1); code != "" {
		t.Fatalf("set before the start: %s %s", code, msg)
	}
	if err := dynamo.NewStore(e.db, e.table).RecordStart(t.Context(), arn1, arnOf(alice)); err != nil {
		t.Fatal(err)
	}
	if code, _ := set(arn1); code != publishapi.CodeRefused {
		t.Fatalf("precondition: a set after the start was not refused")
	}
	if code, _ := set(arn2); code == "" {
		l, _ := e.h.service.Credentials.Store.List(t.Context(), "webhooks")
		for _, c := range l.Credentials {
			if c.Scope == "run:run-n" {
				t.Errorf("the started run's scope run:run-n was rewritten after its start: it now names %s", c.ExecutionARN)
			}
		}
	}
}

// A toolset registered later under the same name gets nothing until a
// credential admin runs toolgate credentials allow (docs/credentials.md):
// an admin's set allows the ids registered so far only when none is
// allowed yet for the target at that origin, so a publisher who registers
// a wider toolset after the first set is not allowed by the admin's next
// routine rotation of the secret.
func TestARotationDoesNotAllowAnIDRegisteredAfterTheFirstSet(t *testing.T) {
	e := newCredEnv(t)
	first := e.registerWebhooks(t, "")
	set := func() {
		t.Helper()
		if _, code, msg := e.set(t, admin, publishapi.CredentialRequest{Toolset: "webhooks", Target: "api.example.com", Secret: []byte(secret)}); code != "" {
			t.Fatalf("set: %s %s", code, msg)
		}
	}
	set()
	// mallory registers a wider toolset of the same name: every method.
	wider, _ := webhooks(t, "")
	for i := range wider.HTTPHosts {
		if wider.HTTPHosts[i].Host == "api.example.com" {
			wider.HTTPHosts[i].Methods = []string{"DELETE", "GET", "PATCH", "POST", "PUT"}
		}
	}
	var err error
	if wider.ID, err = wider.ComputeID(); err != nil {
		t.Fatal(err)
	}
	if wider.ID == first.ID {
		t.Fatal("precondition: the same id")
	}
	doc, err := wider.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	if _, code, msg := e.register(t, mallory, doc); code != "" {
		t.Fatalf("register: %s %s", code, msg)
	}
	allowed := func() bool {
		l, err := e.h.service.Credentials.Store.List(t.Context(), "webhooks")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range l.Markers {
			if m.ToolsetID == wider.ID {
				return m.AllowedBy != ""
			}
		}
		t.Fatal("no marker for the wider id")
		return false
	}
	if allowed() {
		t.Fatal("precondition: allowed before any set")
	}
	set() // the admin rotates the secret
	if allowed() {
		t.Errorf("the admin's rotation allowed toolset %s, registered by another after the first set, with no allow", wider.ID)
	}
}
