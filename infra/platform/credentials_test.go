package platform

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// keyPolicy is the credentials key's logical ID and its policy's
// statements.
func keyPolicy(pj tmpl) (string, []tmpl) {
	id := firstID(pj, "AWS::KMS::Key")
	return id, statements(props(resources(pj, "AWS::KMS::Key")[id])["KeyPolicy"])
}

// keyPrincipals names a key policy statement's principals: a function
// by its name (its role), "account" for the account's root.
func keyPrincipals(pj tmpl, s tmpl) []string {
	byRole := map[string]string{}
	for _, spec := range functionSpecs {
		byRole[symbol(roleOf(pj, spec.LogicalID))] = spec.Name
	}
	var out []string
	p, _ := s["Principal"].(tmpl)
	for _, v := range rawList(p["AWS"]) {
		r := text(v)
		switch {
		case strings.HasSuffix(r, ":root"):
			out = append(out, "account")
		case strings.HasPrefix(r, "${") && strings.HasSuffix(r, ".Arn}"):
			role := strings.TrimSuffix(strings.TrimPrefix(r, "${"), ".Arn}")
			if n, ok := byRole[role]; ok {
				out = append(out, n)
				continue
			}
			out = append(out, role)
		default:
			out = append(out, r)
		}
	}
	return out
}

// cryptoActions are the key's uses: none may be the account's.
func isCryptoAction(a string) bool {
	for _, p := range []string{"kms:*", "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncrypt", "kms:CreateGrant", "kms:Generate"} {
		if a == p || strings.HasPrefix(a, p) || a == "*" {
			return true
		}
	}
	return strings.HasSuffix(a, "*")
}

// checkCredentialKey checks the credentials key: rotation on, retained,
// its alias alias/toolgate-<stage>-credentials; its policy gives the
// account administration only, Decrypt to mcp-call and http and, for the
// toolset scope only, publish, GenerateDataKey to publish only, every use
// conditioned on the purpose tool-credential and on the encryption
// context's keys; for webhook secrets, under the purpose
// webhook-subscription and its own context keys, GenerateDataKey to the
// webhooks function and Decrypt to webhook-delivery only; for inbound
// source secrets, under the purpose webhook-source and its own context
// keys, GenerateDataKey to the sources function and Decrypt to
// webhook-receiver only; and no function's role grants anything of KMS.
func checkCredentialKey(pj tmpl) error {
	var errs []error
	id, stmts := keyPolicy(pj)
	key := resources(pj, "AWS::KMS::Key")[id]
	if props(key)["EnableKeyRotation"] != true {
		errs = append(errs, errors.New("the credentials key does not rotate"))
	}
	if key["DeletionPolicy"] != "Retain" {
		errs = append(errs, fmt.Errorf("the credentials key's DeletionPolicy is %v, want Retain", key["DeletionPolicy"]))
	}
	alias := resourceByType(pj, "AWS::KMS::Alias")
	if props(alias)["AliasName"] != "alias/toolgate-test-credentials" || symbol(getAttID(props(alias)["TargetKeyId"], "Arn")) != symbol(id) {
		errs = append(errs, fmt.Errorf("alias %v -> %v, want alias/toolgate-test-credentials -> the key", props(alias)["AliasName"], props(alias)["TargetKeyId"]))
	}
	uses := map[string][]string{} // purpose action: principals
	for _, s := range stmts {
		who := keyPrincipals(pj, s)
		actions := strs(s["Action"])
		if s["Effect"] != "Allow" {
			continue
		}
		if slices.Contains(who, "account") {
			for _, a := range actions {
				if isCryptoAction(a) {
					errs = append(errs, fmt.Errorf("statement %v gives the account %s", s["Sid"], a))
				}
			}
			continue
		}
		c, _ := s["Condition"].(tmpl)
		eq, _ := c["StringEquals"].(tmpl)
		keys, _ := c["ForAllValues:StringEquals"].(tmpl)
		purpose, _ := eq["kms:EncryptionContext:purpose"].(string)
		contextKeys := map[string][]string{"tool-credential": credentialEncryptionContextKeys, "webhook-subscription": webhookEncryptionContextKeys,
			"webhook-source": sourceEncryptionContextKeys}[purpose]
		if contextKeys == nil || !slices.Equal(strs(keys["kms:EncryptionContextKeys"]), slices.Sorted(slices.Values(contextKeys))) {
			errs = append(errs, fmt.Errorf("statement %v (%v) is not conditioned on purpose tool-credential, webhook-subscription or webhook-source and that purpose's context keys: %v", s["Sid"], who, c))
		}
		for _, a := range actions {
			for _, p := range who {
				if a == "kms:Decrypt" && p == fnPublish && eq["kms:EncryptionContext:scope"] != "toolset" {
					errs = append(errs, fmt.Errorf("statement %v lets publish decrypt other scopes than toolset", s["Sid"]))
				}
				uses[purpose+" "+a] = append(uses[purpose+" "+a], p)
			}
		}
	}
	want := map[string][]string{
		"tool-credential kms:Decrypt": {fnHTTP, fnMCPCall, fnPublish}, "tool-credential kms:GenerateDataKey": {fnPublish},
		// Only the delivering function opens a webhook secret; only the
		// admin function seals one.
		"webhook-subscription kms:Decrypt": {fnWebhookDelivery}, "webhook-subscription kms:GenerateDataKey": {fnWebhooks},
		// Only the receiver opens a source secret, to verify a delivery;
		// only the sources function seals one.
		"webhook-source kms:Decrypt": {fnWebhookReceiver}, "webhook-source kms:GenerateDataKey": {fnSources},
	}
	for _, a := range slices.Sorted(maps.Keys(want)) {
		got := slices.Sorted(slices.Values(uses[a]))
		if !slices.Equal(got, want[a]) {
			errs = append(errs, fmt.Errorf("%s is granted to %v, want %v", a, got, want[a]))
		}
		delete(uses, a)
	}
	for a, who := range uses {
		errs = append(errs, fmt.Errorf("%s is granted to %v: the key's only uses are Decrypt and GenerateDataKey", a, who))
	}
	for who, list := range principalStatements(pj) {
		for _, s := range list {
			for _, a := range strs(s["Action"]) {
				if strings.HasPrefix(a, "kms:") {
					errs = append(errs, fmt.Errorf("%s's IAM policy grants %s: the key policy alone grants the credentials key's uses", who, a))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// The credentials key rotates, outlives the stack, and its policy lets the
// account administer it but never use it; the functions use it only for
// what the key policy names, under the tool-credential purpose. Each
// widening below is refused.
func TestCredentialKey(t *testing.T) {
	if err := checkCredentialKey(platformJSON); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(pj tmpl)
		want   string
	}{
		{"the account may decrypt", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			stmts[0]["Action"] = append(stmts[0]["Action"].([]any), "kms:Decrypt")
		}, "gives the account kms:Decrypt"},
		{"the account may create grants", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			stmts[0]["Action"] = append(stmts[0]["Action"].([]any), "kms:CreateGrant")
		}, "gives the account kms:CreateGrant"},
		{"publish decrypts every scope", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			for _, s := range stmts {
				if s["Sid"] == "ListWithToolsetCredentials" {
					delete(s["Condition"].(tmpl)["StringEquals"].(tmpl), "kms:EncryptionContext:scope")
				}
			}
		}, "lets publish decrypt other scopes"},
		{"no purpose", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			for _, s := range stmts {
				if s["Sid"] == "PresentCredentials" {
					delete(s["Condition"].(tmpl)["StringEquals"].(tmpl), "kms:EncryptionContext:purpose")
				}
			}
		}, "is not conditioned on purpose"},
		{"webhook-delivery opens credentials", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			for _, s := range stmts {
				if s["Sid"] == "OpenWebhookSecrets" {
					s["Condition"].(tmpl)["StringEquals"].(tmpl)["kms:EncryptionContext:purpose"] = "tool-credential"
				}
			}
		}, "is not conditioned on purpose"},
		{"the webhooks function opens webhook secrets", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			for _, s := range stmts {
				if s["Sid"] == "SealWebhookSecrets" {
					s["Action"] = []any{"kms:GenerateDataKey", "kms:Decrypt"}
				}
			}
		}, "webhook-subscription kms:Decrypt is granted to [webhook-delivery webhooks]"},
		{"the sources function opens source secrets", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			for _, s := range stmts {
				if s["Sid"] == "SealSourceSecrets" {
					s["Action"] = []any{"kms:GenerateDataKey", "kms:Decrypt"}
				}
			}
		}, "webhook-source kms:Decrypt is granted to [sources webhook-receiver]"},
		{"the receiver opens webhook secrets", func(pj tmpl) {
			_, stmts := keyPolicy(pj)
			for _, s := range stmts {
				if s["Sid"] == "OpenSourceSecrets" {
					s["Condition"].(tmpl)["StringEquals"].(tmpl)["kms:EncryptionContext:purpose"] = "webhook-subscription"
				}
			}
		}, "is not conditioned on purpose"},
		{"no rotation", func(pj tmpl) {
			props(resourceByType(pj, "AWS::KMS::Key"))["EnableKeyRotation"] = false
		}, "does not rotate"},
		{"a role's own grant", func(pj tmpl) {
			addStatement(pj, "StructuredDataFetchFunction", tmpl{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*"})
		}, "structured-data-fetch's IAM policy grants kms:Decrypt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pj := clone(platformJSON)
			c.mutate(pj)
			if err := checkCredentialKey(pj); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// credentialAdmins is refused when a pattern does not name its account,
// as a reviewer pattern.
func TestConfigRefusesCredentialAdminsOfNoAccount(t *testing.T) {
	cfg := testConfig()
	cfg.CredentialAdmins = []string{"arn:aws:iam::*:user/alice"}
	if err := cfg.check(); err == nil || !strings.Contains(err.Error(), "credentialAdmins") {
		t.Fatalf("%v, want credentialAdmins refused", err)
	}
	cfg.CredentialAdmins = []string{"arn:aws:iam::123456789012:user/alice"}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
}
