package publish

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/publishapi"
)

// attack33: credentials set's caller proof binds the SHA-256 of the
// secret (CredentialSetDigest), and the publish function records every
// accepted proof's binding value in the ledger table (kind proof,
// attribute "binding"). That value is an unsalted, unkeyed SHA-256 chain
// over the secret and fields anyone reading the table knows (toolset,
// target, origin, scope, expiry): whoever can read the ledger table (an
// operator) tests guesses of a low-entropy secret offline, against the
// very rule credential.Digest states ("never to be logged or recorded (a
// short secret's digest can be guessed back)"), and against "A credential
// never enters ... a ledger row" (docs/credentials.md).
func TestAttack33ProofRecordLetsAnOperatorGuessTheSecretOffline(t *testing.T) {
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
