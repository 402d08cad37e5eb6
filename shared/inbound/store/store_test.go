package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	localkms "github.com/toolgate/toolgate/infra/local/kms"
	"github.com/toolgate/toolgate/infra/local/localtest"
	"github.com/toolgate/toolgate/shared/credential/vault"
	"github.com/toolgate/toolgate/shared/inboundapi"
)

// t0 is the tests' time: whole seconds, as items are stamped.
var t0 = time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)

const adder = "arn:aws:iam::123456789012:role/operator"

// newStore is a Store on a table of the test's own on the shared
// dynalite.
func newStore(t *testing.T) *Store {
	t.Helper()
	_, db, name := localtest.SharedTable(t, "inbound")
	return New(db, name)
}

// sealedFor is a sealed secret whose bytes are not a real seal: for tests
// of the store alone, which never open it.
func sealedFor(tag byte) Secret {
	return Secret{Sealed: vault.Sealed{Ciphertext: []byte{tag, 1}, Nonce: bytes.Repeat([]byte{tag}, 12), EncryptedKey: []byte{tag, 2},
		KeyID: "arn:aws:kms:eu-west-1:123456789012:key/k"}}
}

func source(name string, tag byte) Source {
	return Source{Name: name, Scheme: "stripe", Solution: "billing-sync", AddedBy: adder, AddedAt: t0, Secrets: []Secret{sealedFor(tag)}}
}

// A source is put once, read whole, read for verifying (its secrets, not
// its Solution) and for starting (its Solution, not its secrets), listed
// and deleted.
func TestSourcesArePutReadListedAndDeleted(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	for i, name := range []string{"stripe-prod", "billing", "gh"} {
		src := source(name, byte(i))
		if name == "billing" {
			src.EndUser, src.MaxBodyBytes = "cust-42", 1024
		}
		if err := st.PutSource(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Source(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	want := source("billing", 1)
	want.EndUser, want.MaxBodyBytes, want.UpdatedAt, want.Version = "cust-42", 1024, t0, 1
	want.Secrets[0].CreatedAt = t0
	if !sameSource(got, want) {
		t.Errorf("Source =\n%+v\nwant\n%+v", got, want)
	}
	verify, err := st.SourceSecrets(ctx, "billing")
	if err != nil || verify.Scheme != "stripe" || verify.MaxBodyBytes != 1024 || len(verify.Secrets) != 1 || verify.Solution != "" || verify.EndUser != "" {
		t.Errorf("SourceSecrets = %+v, %v", verify, err)
	}
	run, err := st.SourceRun(ctx, "billing")
	if err != nil || run.Solution != "billing-sync" || run.EndUser != "cust-42" || run.AddedBy != adder || run.Scheme != "stripe" || run.Secrets != nil {
		t.Errorf("SourceRun = %+v, %v", run, err)
	}
	list, err := st.Sources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"billing", "gh", "stripe-prod"}) || list[1].MaxBodyBytes != inboundapi.DefaultMaxBodyBytes {
		t.Errorf("Sources = %v (%+v)", names, list)
	}
	if err := st.DeleteSource(ctx, "gh"); err != nil {
		t.Fatal(err)
	}
	for _, read := range []func() error{
		func() error { _, err := st.Source(ctx, "gh"); return err },
		func() error { _, err := st.SourceSecrets(ctx, "gh"); return err },
		func() error { return st.DeleteSource(ctx, "gh") },
	} {
		if err := read(); !errors.Is(err, ErrNotFound) {
			t.Errorf("after the delete: %v, want ErrNotFound", err)
		}
	}
}

func sameSource(a, b Source) bool {
	return a.Name == b.Name && a.Scheme == b.Scheme && a.Solution == b.Solution && a.EndUser == b.EndUser && a.AddedBy == b.AddedBy &&
		a.MaxBodyBytes == b.MaxBodyBytes && a.AddedAt.Equal(b.AddedAt) && a.UpdatedAt.Equal(b.UpdatedAt) && a.Version == b.Version &&
		slices.EqualFunc(a.Secrets, b.Secrets, func(x, y Secret) bool {
			return bytes.Equal(x.Sealed.Ciphertext, y.Sealed.Ciphertext) && x.Sealed.KeyID == y.Sealed.KeyID &&
				x.CreatedAt.Equal(y.CreatedAt) && x.RetiresAt.Equal(y.RetiresAt)
		})
}

// A name is put once: the second put is ErrExists and the first source
// stays as it was.
func TestPutSourceRefusesANameTaken(t *testing.T) {
	st := newStore(t)
	if err := st.PutSource(t.Context(), source("billing", 1)); err != nil {
		t.Fatal(err)
	}
	other := source("billing", 2)
	other.Solution = "attacker"
	if err := st.PutSource(t.Context(), other); !errors.Is(err, ErrExists) {
		t.Fatalf("second PutSource = %v, want ErrExists", err)
	}
	if got, err := st.Source(t.Context(), "billing"); err != nil || got.Solution != "billing-sync" {
		t.Errorf("Source = %+v, %v", got, err)
	}
}

// PutSource refuses what could not be verified or run, naming the field,
// and writes nothing.
func TestPutSourceRefusesAnIncompleteSource(t *testing.T) {
	st := newStore(t)
	for _, c := range []struct {
		name string
		edit func(*Source)
		says string
	}{
		{"a bad name", func(s *Source) { s.Name = "Billing" }, "source name"},
		{"a name with a slash", func(s *Source) { s.Name = "a/b" }, "source name"},
		{"an unknown scheme", func(s *Source) { s.Scheme = "svix" }, "scheme"},
		{"no solution", func(s *Source) { s.Solution = "" }, "no solution"},
		{"no adder", func(s *Source) { s.AddedBy = "" }, "added_by"},
		{"a body bound over the cap", func(s *Source) { s.MaxBodyBytes = inboundapi.MaxBodyBytes + 1 }, "max_body_bytes"},
		{"no secret", func(s *Source) { s.Secrets = nil }, "current one"},
		{"a retiring secret last", func(s *Source) { s.Secrets[0].RetiresAt = t0.Add(time.Hour) }, "current one"},
		{"two current secrets", func(s *Source) { s.Secrets = append(s.Secrets, sealedFor(9)) }, "only the last"},
		{"an incomplete seal", func(s *Source) { s.Secrets[0].Sealed.EncryptedKey = nil }, "incomplete"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := source("billing", 1)
			c.edit(&src)
			if err := st.PutSource(t.Context(), src); err == nil || !strings.Contains(err.Error(), c.says) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("PutSource = %v, want ErrInvalid naming %q", err, c.says)
			}
		})
	}
	if list, err := st.Sources(t.Context()); err != nil || len(list) != 0 {
		t.Errorf("Sources after refusals = %+v, %v", list, err)
	}
}

// UpdateSecrets is conditional on the version read: a stale version is
// ErrConflict and changes nothing; a missing source is ErrNotFound.
func TestUpdateSecretsIsConditionalOnTheVersion(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	if err := st.PutSource(ctx, source("billing", 1)); err != nil {
		t.Fatal(err)
	}
	cur, err := st.Source(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	rotated := cur.Secrets[0]
	rotated.RetiresAt = t0.Add(25 * time.Hour)
	next := sealedFor(2)
	t1 := t0.Add(time.Hour)
	if err := st.UpdateSecrets(ctx, "billing", []Secret{rotated, next}, cur.Version, t1); err != nil {
		t.Fatal(err)
	}
	got, err := st.Source(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || !got.UpdatedAt.Equal(t1) || len(got.Secrets) != 2 || !got.Secrets[1].CreatedAt.Equal(t1) {
		t.Errorf("after the rotation: %+v", got)
	}
	if v := got.Verifying(t0.Add(24 * time.Hour)); len(v) != 2 {
		t.Errorf("Verifying within the grace = %d secrets, want 2", len(v))
	}
	if v := got.Verifying(t0.Add(26 * time.Hour)); len(v) != 1 || v[0].Sealed.Ciphertext[0] != 2 {
		t.Errorf("Verifying after the grace = %+v, want the new one", v)
	}
	// A second change read at version 1 lost the race.
	if err := st.UpdateSecrets(ctx, "billing", []Secret{sealedFor(3)}, cur.Version, t1); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale UpdateSecrets = %v, want ErrConflict", err)
	}
	if again, _ := st.Source(ctx, "billing"); again.Version != 2 || len(again.Secrets) != 2 {
		t.Errorf("a stale update changed the source: %+v", again)
	}
	if err := st.UpdateSecrets(ctx, "nobody", []Secret{sealedFor(3)}, 1, t1); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateSecrets of no source = %v, want ErrNotFound", err)
	}
	if err := st.UpdateSecrets(ctx, "billing", []Secret{rotated}, 2, t1); !errors.Is(err, ErrInvalid) {
		t.Errorf("UpdateSecrets leaving no current secret = %v, want ErrInvalid", err)
	}
}

// A source's secret holders: its adder at PutSource; a rotation
// (UpdateSecretsHeldBy) adds the rotator in the same conditional write; a
// retirement (UpdateSecrets) keeps them; an item without the attribute
// reads as its adder alone; HeldBy moves a holder already listed last and
// keeps the newest MaxSecretHolders.
func TestSecretHoldersAreTheAdderThenEachRotator(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	if err := st.PutSource(ctx, source("billing", 1)); err != nil {
		t.Fatal(err)
	}
	cur, err := st.Source(ctx, "billing")
	if err != nil || !slices.Equal(cur.SecretHolders, []string{adder}) {
		t.Fatalf("after PutSource: holders %v, %v; want the adder", cur.SecretHolders, err)
	}
	rotator := "arn:aws:iam::123456789012:user/rotator"
	rotated := cur.Secrets[0]
	rotated.RetiresAt = t0.Add(25 * time.Hour)
	t1 := t0.Add(time.Hour)
	if err := st.UpdateSecretsHeldBy(ctx, "billing", []Secret{rotated, sealedFor(2)}, HeldBy(cur.SecretHolders, rotator), cur.Version, t1); err != nil {
		t.Fatal(err)
	}
	got, err := st.SourceRun(ctx, "billing")
	if err != nil || !slices.Equal(got.SecretHolders, []string{adder, rotator}) {
		t.Fatalf("after the rotation: holders %v, %v", got.SecretHolders, err)
	}
	if err := st.UpdateSecrets(ctx, "billing", []Secret{sealedFor(2)}, 2, t1); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Source(ctx, "billing"); !slices.Equal(got.SecretHolders, []string{adder, rotator}) || got.Version != 3 {
		t.Errorf("after the retirement: %v version %d", got.SecretHolders, got.Version)
	}
	// A stale rotation adds nobody.
	if err := st.UpdateSecretsHeldBy(ctx, "billing", []Secret{sealedFor(4)}, []string{adder, rotator, "arn:aws:iam::123456789012:user/late"}, 2, t1); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale UpdateSecretsHeldBy = %v, want ErrConflict", err)
	}
	if got, _ := st.Source(ctx, "billing"); len(got.SecretHolders) != 2 {
		t.Errorf("a stale rotation changed the holders: %v", got.SecretHolders)
	}

	if h := HeldBy([]string{"a", "b", "c"}, "a"); !slices.Equal(h, []string{"b", "c", "a"}) {
		t.Errorf("HeldBy of a listed holder = %v", h)
	}
	var many []string
	for i := range MaxSecretHolders {
		many = append(many, fmt.Sprintf("arn:aws:iam::123456789012:user/u%d", i))
	}
	if h := HeldBy(many, "new"); len(h) != MaxSecretHolders || h[0] != many[1] || h[len(h)-1] != "new" {
		t.Errorf("HeldBy past the bound = %v", h)
	}
	if err := st.UpdateSecretsHeldBy(ctx, "billing", []Secret{sealedFor(5)}, append(many, "one-more"), 3, t1); !errors.Is(err, ErrInvalid) {
		t.Errorf("UpdateSecretsHeldBy over the bound = %v, want ErrInvalid", err)
	}
}

func schedule(name string) Schedule {
	return Schedule{Name: name, Solution: "nightly-report", Expression: "cron(0 2 * * ? *)", AddedBy: adder, AddedAt: t0,
		Input: json.RawMessage(`{"region":"eu"}`)}
}

// A schedule is put once, read, listed, paused and resumed on its version,
// and deleted.
func TestSchedulesArePutPausedResumedAndDeleted(t *testing.T) {
	st := newStore(t)
	ctx := t.Context()
	for _, name := range []string{"nightly", "hourly"} {
		if err := st.PutSchedule(ctx, schedule(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutSchedule(ctx, schedule("nightly")); !errors.Is(err, ErrExists) {
		t.Fatalf("second PutSchedule = %v, want ErrExists", err)
	}
	got, err := st.Schedule(ctx, "nightly")
	if err != nil || got.State != inboundapi.StateEnabled || got.Version != 1 || string(got.Input) != `{"region":"eu"}` ||
		got.Expression != "cron(0 2 * * ? *)" || !got.AddedAt.Equal(t0) || got.AddedBy != adder {
		t.Fatalf("Schedule = %+v, %v", got, err)
	}
	t1 := t0.Add(time.Minute)
	if err := st.SetScheduleState(ctx, "nightly", inboundapi.StatePaused, 1, t1); err != nil {
		t.Fatal(err)
	}
	if err := st.SetScheduleState(ctx, "nightly", inboundapi.StateEnabled, 1, t1); !errors.Is(err, ErrConflict) {
		t.Errorf("a stale resume = %v, want ErrConflict", err)
	}
	if err := st.SetScheduleState(ctx, "nightly", "DISABLED", 2, t1); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown state = %v, want ErrInvalid", err)
	}
	if err := st.SetScheduleState(ctx, "weekly", inboundapi.StatePaused, 1, t1); !errors.Is(err, ErrNotFound) {
		t.Errorf("pausing no schedule = %v, want ErrNotFound", err)
	}
	list, err := st.Schedules(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "hourly" || list[1].State != inboundapi.StatePaused || list[1].Version != 2 ||
		!list[1].UpdatedAt.Equal(t1) {
		t.Fatalf("Schedules = %+v, %v", list, err)
	}
	if err := st.DeleteSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Schedule(ctx, "nightly"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Schedule after the delete = %v", err)
	}
}

// PutSchedule refuses an input that is no JSON value, or too large, and a
// schedule without what it runs.
func TestPutScheduleRefusesABadSchedule(t *testing.T) {
	st := newStore(t)
	for _, c := range []struct {
		name string
		edit func(*Schedule)
		says string
	}{
		{"input not JSON", func(s *Schedule) { s.Input = json.RawMessage(`{"a":`) }, "input"},
		{"no input", func(s *Schedule) { s.Input = nil }, "input"},
		{"input too large", func(s *Schedule) {
			s.Input = json.RawMessage(`"` + strings.Repeat("x", inboundapi.MaxScheduleInputBytes) + `"`)
		}, "input"},
		{"no expression", func(s *Schedule) { s.Expression = "" }, "expression"},
		{"no solution", func(s *Schedule) { s.Solution = "" }, "solution"},
		{"an unknown state", func(s *Schedule) { s.State = "DISABLED" }, "state"},
		{"a bad name", func(s *Schedule) { s.Name = "-nightly" }, "schedule name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sch := schedule("nightly")
			c.edit(&sch)
			if err := st.PutSchedule(t.Context(), sch); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("PutSchedule = %v, want ErrInvalid naming %q", err, c.says)
			}
		})
	}
}

// A secret sealed for one source opens for it only: copied into another
// source's item, it does not open, and no error quotes a byte of it.
func TestASealedSecretMovedToAnotherSourceDoesNotOpen(t *testing.T) {
	srv := localkms.StartForTest(t, "test")
	k := srv.Client()
	secret := []byte("whsec_canarycanarycanary")
	sealed, err := SealSecret(t.Context(), k, srv.Alias, "billing", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed.Ciphertext, secret) || sealed.KeyID != srv.KeyARN {
		t.Errorf("sealed %+v", sealed)
	}
	got, err := OpenSecret(t.Context(), k, "billing", sealed)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("OpenSecret for its source = %q, %v", got, err)
	}
	_, err = OpenSecret(t.Context(), k, "payments", sealed)
	if err == nil {
		t.Fatal("a secret sealed for one source opened for another")
	}
	if strings.Contains(err.Error(), "canary") {
		t.Errorf("error quotes the secret: %v", err)
	}
	for _, bad := range [][]byte{nil, bytes.Repeat([]byte("s"), MaxSecretBytes+1)} {
		if _, err := SealSecret(t.Context(), k, srv.Alias, "billing", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("SealSecret of %d bytes = %v, want ErrInvalid", len(bad), err)
		}
	}
	if _, err := SealSecret(t.Context(), k, srv.Alias, "Bad/Name", secret); err == nil {
		t.Error("SealSecret sealed for a bad source name")
	}
}
