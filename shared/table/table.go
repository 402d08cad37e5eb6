package table

import (
	"fmt"
	"slices"
	"strings"
)

// Key and TTL attributes of every item.
const (
	// PK is the partition key: an item kind's Prefix and the id it names.
	PK = "pk"
	// SK is the sort key: a kind's SK shape.
	SK = "sk"
	// ExpiresAt is the table's TTL attribute, in epoch seconds (DynamoDB
	// deletes an item some time after it passes).
	ExpiresAt = "expires_at"
)

// Type is a DynamoDB attribute type, as the low-level API names it.
type Type string

// The attribute types items use.
const (
	String Type = "S"
	Number Type = "N"
	Bool   Type = "BOOL"
	Map    Type = "M"
	List   Type = "L"
	Null   Type = "NULL"
	Binary Type = "B"
	// StringSet is written by a ,stringset field; no item kind has one.
	StringSet Type = "SS"
	Unknown   Type = "" // any: a value read whatever its type (the legacy seq)
)

// Attribute is one non-key attribute of an item kind.
type Attribute struct {
	Name string
	// Types are the types the attribute may hold, the one written first:
	// several where items written by earlier code hold another (a call's
	// seq was a number before for_each; docs/ledger.md).
	Types []Type
	// Doc says what it holds and in which unit.
	Doc string
}

// Kind is one kind of item: all items whose partition key starts with
// Prefix and whose sort key has the shape SK.
type Kind struct {
	// Name names the kind in docs and errors ("call").
	Name string
	// Prefix starts the partition key: "RUN#". Two kinds may share one
	// (a run's call items and row items), told apart by their sort keys.
	Prefix string
	// PKShape and SKShape are the keys as docs/ledger.md writes them:
	// "RUN#<run_id>", "CALL#<seq's sort key>".
	PKShape, SKShape string
	// SKValue is the sort key of every item of the kind, when it is
	// constant ("TOOLSET"); "" when it varies.
	SKValue string
	// SKPrefix starts every sort key of the kind when they vary ("CALL#",
	// then what SKShape says); "" when SKValue is set. Kinds sharing a
	// Prefix may share it too (a run's calls and rows, which one Query of
	// the run reads in sort key order).
	SKPrefix string
	// SKInfix, when neither SKValue nor SKPrefix is set, is the part of
	// every sort key of the kind that tells it from the other kinds of its
	// Prefix, its sort keys varying before and after it ("#SCOPE#" in a
	// credential's "<target>#<origin>#SCOPE#<scope>").
	SKInfix string
	// Attributes are every non-key attribute an item of the kind may
	// hold, ExpiresAt included when TTL ends it.
	Attributes []Attribute
	// Indexes are the indexes whose keys the kind's items carry (none,
	// one, or several: a parked call's item is listed by status and, while
	// it waits for a credential, by scope).
	Indexes []*Index
	// Doc says what an item of the kind is and which code owns it.
	Doc string
}

// Key is the partition key of the item of the kind that id names:
// Prefix + id.
func (k *Kind) Key(id string) string { return k.Prefix + id }

// ID is the id a partition key of the kind names, and whether it is one of
// the kind's keys at all.
func (k *Kind) ID(pk string) (string, bool) { return strings.CutPrefix(pk, k.Prefix) }

// Carries reports whether the kind's items carry the keys of index ix.
func (k *Kind) Carries(ix *Index) bool { return slices.Contains(k.Indexes, ix) }

// Attribute returns the kind's attribute name, or nil.
func (k *Kind) Attribute(name string) *Attribute {
	for i := range k.Attributes {
		if k.Attributes[i].Name == name {
			return &k.Attributes[i]
		}
	}
	return nil
}

// Names returns the names given, in order, after checking that each is a
// key attribute or one of the kind's: it panics on another, a programming
// error that the package's tests and every caller's init find.
func (k *Kind) Names(names ...string) []string {
	for _, n := range names {
		if n != PK && n != SK && k.Attribute(n) == nil {
			panic(fmt.Sprintf("table: item kind %s has no attribute %q", k.Name, n))
		}
	}
	return names
}

// AllNames is every attribute name of the kind, key attributes first.
func (k *Kind) AllNames() []string {
	out := []string{PK, SK}
	for _, a := range k.Attributes {
		out = append(out, a.Name)
	}
	return out
}

// Index is a global secondary index of the table.
type Index struct {
	Name string
	// PK and SK are its key attributes (SK may be empty), and PKPrefix
	// the start of every partition key value it holds: "" when the
	// partition key is not a string (a sparse index's constant flag).
	PK, SK, PKPrefix string
	// PKType and SKType are the key attributes' types: String when empty.
	// A kind owning the index declares each key attribute with its type
	// (Check).
	PKType, SKType Type
	// Projects are the non-key attributes it projects (INCLUDE); none:
	// the keys only (KEYS_ONLY).
	Projects []string
	Doc      string
}

// KeyTypes are the types of the index's partition and sort keys, String
// where PKType or SKType is empty.
func (ix *Index) KeyTypes() (pk, sk Type) {
	pk, sk = ix.PKType, ix.SKType
	if pk == Unknown {
		pk = String
	}
	if sk == Unknown {
		sk = String
	}
	return pk, sk
}

// Attributes is every attribute a Query of the index may name: the
// table's keys, the index's and what it projects.
func (ix *Index) Attributes() []string {
	return slices.Concat([]string{PK, SK, ix.PK, ix.SK}, ix.Projects)
}

// Kinds is every item kind of the table, in the order docs/ledger.md
// lists them.
var Kinds = []*Kind{Call, Row, Cover, ReuseClaim, Key, Toolset, Published, Review, Binding, Start, ChildPointer, Proof, Credential, CredentialToolset,
	WebhookSubscription, WebhookEvent, WebhookCallEvent, WebhookAttempt, Park, Reconciliation, Fork, Notice,
	InboundSource, Schedule, InboundEvent, Shape}

// Indexes is every index of the table.
var Indexes = []*Index{ReviewsByStatus, WebhookUnsent, ParksByStatus, InboundUnqueued}

// Prefixes is every distinct partition key prefix, in Kinds order.
func Prefixes() []string {
	var out []string
	for _, k := range Kinds {
		if !slices.Contains(out, k.Prefix) {
			out = append(out, k.Prefix)
		}
	}
	return out
}

// KindsOf returns the kinds whose items start with prefix.
func KindsOf(prefix string) []*Kind {
	var out []*Kind
	for _, k := range Kinds {
		if k.Prefix == prefix {
			out = append(out, k)
		}
	}
	return out
}
