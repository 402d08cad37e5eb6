package platform

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/table"
)

// ledgerIndexes are the table's global secondary indexes, as declared
// (table.Indexes), the same the local stack and the tests create: the
// reviews-by-status index lists reviews without a Scan and projects none
// of a review's inputs, reason or task token.
var ledgerIndexes = table.Indexes

// ledgerKinds are the table's item kinds, which declare the indexes' key
// types (indexKeyType).
var ledgerKinds = table.Kinds

// indexKeyType is the type of index ix's key attribute name, as the item
// kinds whose items carry the index declare it (the first type written):
// a number for the webhook-unsent index's constant 1, a string otherwise,
// and a string when no kind of kinds declares it.
func indexKeyType(kinds []*table.Kind, ix *table.Index, name string) awsdynamodb.AttributeType {
	for _, k := range kinds {
		if k.Index != ix {
			continue
		}
		if a := k.Attribute(name); a != nil && len(a.Types) > 0 {
			switch a.Types[0] {
			case table.Number:
				return awsdynamodb.AttributeType_NUMBER
			case table.Binary:
				return awsdynamodb.AttributeType_BINARY
			}
		}
	}
	return awsdynamodb.AttributeType_STRING
}

// Throughput is the on-demand maxima of the table or of an index
// (OnDemandThroughput), in request units per second: a read or write that
// would take more is throttled (DynamoDB Developer Guide, "DynamoDB maximum
// throughput for on-demand tables"). Each is 1 or more, or noMaximum; 0 and
// noMaximum leave the maximum out of the template.
type Throughput struct {
	MaxReadRequestUnits  int `json:"maxReadRequestUnits"`
	MaxWriteRequestUnits int `json:"maxWriteRequestUnits"`
}

// noMaximum is DynamoDB's value for no maximum (UpdateTable's
// OnDemandThroughput: -1 removes a maximum). CloudFormation's schema takes 1
// or more only, so the template leaves such a maximum out. The account's
// per-table quota, 40,000 request units per second of each kind by default,
// still applies.
const noMaximum = -1

// The default maxima (docs/infra.md, "Concurrency and throughput"). The
// table's are what a new on-demand table serves at once (12,000 read and
// 4,000 write request units per second: DynamoDB Developer Guide, "Initial
// throughput for on-demand capacity mode"), far over what the functions'
// default reserved concurrency can drive with ordinary results, and a bound
// on what a runaway costs. The index holds review items only, written and
// listed by review-request and review-decision.
var (
	defaultTableThroughput = Throughput{MaxReadRequestUnits: 12000, MaxWriteRequestUnits: 4000}
	defaultIndexThroughput = Throughput{MaxReadRequestUnits: 4000, MaxWriteRequestUnits: 4000}
)

// check reports each maximum that is neither 1 or more nor noMaximum,
// naming the context key.
func (t Throughput) check(key string) []error {
	var problems []error
	for _, m := range []struct {
		field string
		v     int
	}{{"maxReadRequestUnits", t.MaxReadRequestUnits}, {"maxWriteRequestUnits", t.MaxWriteRequestUnits}} {
		if m.v < 1 && m.v != noMaximum {
			problems = append(problems, fmt.Errorf("%s.%s %d: want request units per second, 1 or more, or %d for no maximum", key, m.field, m.v, noMaximum))
		}
	}
	return problems
}

// maxima are t's values for the CDK's props: nil (left out) for 0 and
// noMaximum.
func (t Throughput) maxima() (read, write *float64) {
	if t.MaxReadRequestUnits > 0 {
		read = jsii.Number(t.MaxReadRequestUnits)
	}
	if t.MaxWriteRequestUnits > 0 {
		write = jsii.Number(t.MaxWriteRequestUnits)
	}
	return read, write
}

// LedgerProps configure NewLedger.
type LedgerProps struct {
	// TableName is the table's physical name: the platform stack and the
	// CLI (--table, /toolgate/<stage>/table/name) find it by this name.
	TableName string
	// RemovalPolicy applies when the table leaves the stack; zero means
	// awscdk.RemovalPolicy_RETAIN (the ledger is the audit record).
	RemovalPolicy awscdk.RemovalPolicy
	// DeletionProtection guards the table against DeleteTable; nil means
	// true.
	DeletionProtection *bool
	// TableThroughput and IndexThroughput are the on-demand maxima of the
	// table and of each of its indexes; zero fields set none.
	TableThroughput Throughput
	IndexThroughput Throughput
}

// LedgerStackProps configure NewLedgerStack: the stack's and the
// table's (LedgerProps).
type LedgerStackProps struct {
	awscdk.StackProps
	LedgerProps
}

// LedgerStack holds the ledger table alone, so that the data outlives any
// change to the functions and roles around it.
type LedgerStack struct {
	awscdk.Stack
	Table awsdynamodb.Table
}

// Ledger is the ledger table (NewLedger).
type Ledger struct {
	constructs.Construct
	Table awsdynamodb.Table
}

// NewLedgerStack defines the stack that holds the ledger table alone
// (NewLedger, under the concern id Ledger, which adds nothing to logical
// IDs: the table's stays LedgerTable...) and its TableName output.
func NewLedgerStack(scope constructs.Construct, id string, props *LedgerStackProps) *LedgerStack {
	stack := newConcernStack(scope, id, &props.StackProps)
	l := NewLedger(stack, "Ledger", &props.LedgerProps)
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: l.Table.TableName()})
	return &LedgerStack{Stack: stack, Table: l.Table}
}

// NewLedger defines the ledger table with the keys of docs/ledger.md
// (pk and sk, strings) and its indexes: on-demand capacity with the maxima
// from props, TTL on expires_at (epoch seconds), point-in-time recovery,
// deletion protection and the removal policy from props.
func NewLedger(scope constructs.Construct, id string, props *LedgerProps) *Ledger {
	c := newConcern(scope, id)
	removal := props.RemovalPolicy
	if removal == "" {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	protect := props.DeletionProtection
	if protect == nil {
		protect = jsii.Bool(true)
	}
	maxRead, maxWrite := props.TableThroughput.maxima()
	table := awsdynamodb.NewTable(c, jsii.String("LedgerTable"), &awsdynamodb.TableProps{
		TableName:            jsii.String(props.TableName),
		PartitionKey:         &awsdynamodb.Attribute{Name: jsii.String(table.PK), Type: awsdynamodb.AttributeType_STRING},
		SortKey:              &awsdynamodb.Attribute{Name: jsii.String(table.SK), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:          awsdynamodb.BillingMode_PAY_PER_REQUEST,
		MaxReadRequestUnits:  maxRead,
		MaxWriteRequestUnits: maxWrite,
		TimeToLiveAttribute:  jsii.String(table.ExpiresAt),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: protect,
		RemovalPolicy:      removal,
	})
	indexRead, indexWrite := props.IndexThroughput.maxima()
	for _, ix := range ledgerIndexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexProps{
			MaxReadRequestUnits:  indexRead,
			MaxWriteRequestUnits: indexWrite,
			IndexName:            jsii.String(ix.Name),
			PartitionKey:         &awsdynamodb.Attribute{Name: jsii.String(ix.PK), Type: indexKeyType(ledgerKinds, ix, ix.PK)},
			ProjectionType:       awsdynamodb.ProjectionType_KEYS_ONLY,
		}
		if len(ix.Projects) > 0 {
			gsi.ProjectionType, gsi.NonKeyAttributes = awsdynamodb.ProjectionType_INCLUDE, jsii.Strings(ix.Projects...)
		}
		if ix.SK != "" {
			gsi.SortKey = &awsdynamodb.Attribute{Name: jsii.String(ix.SK), Type: indexKeyType(ledgerKinds, ix, ix.SK)}
		}
		table.AddGlobalSecondaryIndex(gsi)
	}
	return &Ledger{Construct: c, Table: table}
}
