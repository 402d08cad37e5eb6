package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/ledger"
	"github.com/toolgate/toolgate/shared/review/dynamo"
)

// ledgerIndexes are the table's global secondary indexes, the same values
// shared/ledger's CreateTable takes for the local stack and the tests: the
// reviews-by-status index (shared/review) lists reviews without a Scan and
// projects none of a review's inputs, reason or task token.
var ledgerIndexes = []ledger.Index{dynamo.Index}

// LedgerStackProps configure NewLedgerStack.
type LedgerStackProps struct {
	awscdk.StackProps
	// TableName is the table's physical name: the platform stack and the
	// CLI (--table, /toolgate/<stage>/table/name) find it by this name.
	TableName string
	// RemovalPolicy applies when the table leaves the stack; zero means
	// awscdk.RemovalPolicy_RETAIN (the ledger is the audit record).
	RemovalPolicy awscdk.RemovalPolicy
	// DeletionProtection guards the table against DeleteTable; nil means
	// true.
	DeletionProtection *bool
}

// LedgerStack holds the ledger table alone, so that the data outlives any
// change to the functions and roles around it.
type LedgerStack struct {
	awscdk.Stack
	Table awsdynamodb.Table
}

// NewLedgerStack defines the ledger table with the keys of docs/ledger.md
// (pk and sk, strings) and its indexes: on-demand capacity, TTL on
// expires_at (epoch seconds), point-in-time recovery, deletion protection and the removal
// policy from props.
func NewLedgerStack(scope constructs.Construct, id string, props *LedgerStackProps) *LedgerStack {
	stack := awscdk.NewStack(scope, jsii.String(id), &props.StackProps)
	removal := props.RemovalPolicy
	if removal == "" {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	protect := props.DeletionProtection
	if protect == nil {
		protect = jsii.Bool(true)
	}
	table := awsdynamodb.NewTable(stack, jsii.String("LedgerTable"), &awsdynamodb.TableProps{
		TableName:           jsii.String(props.TableName),
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(ledger.AttrPK), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(ledger.AttrSK), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(ledger.AttrExpiresAt),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: protect,
		RemovalPolicy:      removal,
	})
	for _, ix := range ledgerIndexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:        jsii.String(ix.Name),
			PartitionKey:     &awsdynamodb.Attribute{Name: jsii.String(ix.PK), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
			NonKeyAttributes: jsii.Strings(ix.Projects...),
		}
		if ix.SK != "" {
			gsi.SortKey = &awsdynamodb.Attribute{Name: jsii.String(ix.SK), Type: awsdynamodb.AttributeType_STRING}
		}
		table.AddGlobalSecondaryIndex(gsi)
	}
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: table.TableName()})
	return &LedgerStack{Stack: stack, Table: table}
}
