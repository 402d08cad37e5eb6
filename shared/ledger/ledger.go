package ledger

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/toolgate/toolgate/shared/ledger/tabledef"
	"github.com/toolgate/toolgate/shared/seal"
)

// API is the part of the DynamoDB client the ledger uses (tabledef.API).
type API = tabledef.API

// Key attribute names of the table (shared/ledger/tabledef).
const (
	AttrPK        = tabledef.AttrPK
	AttrSK        = tabledef.AttrSK
	AttrExpiresAt = tabledef.AttrExpiresAt
)

// DefaultRetention is how long records and rows are kept before their TTL
// (expires_at) ends them (tabledef.DefaultRetention).
const DefaultRetention = tabledef.DefaultRetention

// ErrNotFound is returned for an item that does not exist.
var ErrNotFound = errors.New("not found")

// ErrForged is returned for a call item whose seal is not the reading
// store's (seal.Forged), or that has none where one must be: another
// writer made or changed it (docs/ledger.md, "Records are sealed by the
// function that writes them").
var ErrForged = errors.New("the record's seal does not verify")

// Store reads and writes the ledger table.
type Store struct {
	db        API
	table     string
	retention time.Duration
	now       func() time.Time
	mac       seal.Key // WithMAC; the zero Key writes no seal
	layout    Layout   // WithLayout: the layout claims write
}

// New returns a Store on the named table.
func New(db API, table string) *Store {
	return &Store{db: db, table: table, retention: DefaultRetention, now: time.Now}
}

// WithClock returns a copy of the store that reads time from now (tests).
func (s *Store) WithClock(now func() time.Time) *Store {
	c := *s
	c.now = now
	return &c
}

// WithRetention returns a copy of the store writing expires_at = now + d.
func (s *Store) WithRetention(d time.Duration) *Store {
	c := *s
	c.retention = d
	return &c
}

// Table returns the table name.
func (s *Store) Table() string { return s.table }

// Now returns the store's clock.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) expires() types.AttributeValue {
	return tabledef.N(s.now().Add(s.retention).Unix())
}

// Attribute values (shared/ledger/tabledef).
var (
	str  = tabledef.S
	getS = tabledef.GetS
)

// IsConditionFailed reports a failed conditional write
// (tabledef.IsConditionFailed).
func IsConditionFailed(err error) bool { return tabledef.IsConditionFailed(err) }

// CreateTable creates the ledger table with the given indexes, for the
// local stack and tests (tabledef.CreateTable).
var CreateTable = tabledef.CreateTable

func jsonAttr(v json.RawMessage) types.AttributeValue {
	if len(v) == 0 {
		return &types.AttributeValueMemberNULL{Value: true}
	}
	return str(string(v))
}
