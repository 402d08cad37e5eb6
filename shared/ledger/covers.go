package ledger

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/toolgate/toolgate/shared/seal"
	"github.com/toolgate/toolgate/shared/table"
)

// Cover is an approved definition change that covers the later calls of
// its tool in its run (table.Cover; docs/parking.md, "Approvals that
// cover later calls"): the call of ParkID was sent under its APPROVED
// tool.schema_changed park, which DecidedBy approved for the server's
// definition CurrentDigest against the pinned PinnedDigest (each
// "sha256:" and 64 hex digits).
type Cover struct {
	RunID, Tool                 string
	ParkID                      string
	PinnedDigest, CurrentDigest string
	DecidedBy                   string
	// Seal is what the reading store found of the item's seal (Cover):
	// seal.Valid only for one it wrote itself over these very fields.
	// PutCover ignores it.
	Seal seal.Status
}

// coverItem is a cover item as stored (table.Cover).
type coverItem struct {
	PK            string `dynamodbav:"pk"`
	SK            string `dynamodbav:"sk"`
	Tool          string `dynamodbav:"tool"`
	ParkID        string `dynamodbav:"park_id"`
	PinnedDigest  string `dynamodbav:"pinned_digest"`
	CurrentDigest string `dynamodbav:"current_digest"`
	DecidedBy     string `dynamodbav:"decided_by"`
	MAC           string `dynamodbav:"mac,omitempty"`
	ExpiresAt     int64  `dynamodbav:"expires_at,omitempty"` // epoch seconds
}

// coverSealFields are the fields a cover's seal covers, in order: the
// run, the tool, the approved and the pinned digests, the park and its
// decider. The run and the tool and digest its sort key names are among
// them, so that an item copied to another run's partition, or to another
// tool's or definition's sort key, does not verify there.
func coverSealFields(c Cover) []string {
	return []string{c.RunID, c.Tool, c.CurrentDigest, c.PinnedDigest, c.ParkID, c.DecidedBy}
}

// CoverAttributes are what Cover reads of a cover item
// (table.CoverReadAttributes less the keys).
var CoverAttributes = table.CoverReadAttributes[2:]

// coverProjection is CoverAttributes as a ProjectionExpression and its
// names.
var coverProjection, coverProjectionNames = projectionOf(CoverAttributes)

// coverKey is the key of the cover of tool's definition digest in run.
func coverKey(runID, tool, digest string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(table.Cover.Key(runID)), AttrSK: str(table.CoverSK(tool, digest))}
}

// PutCover records c (table.Cover: its run's partition, sort key
// table.CoverSK of its tool and current digest) with one PutItem, sealed
// with the store's key, expiring the ledger's retention from now: a cover
// already there (another approved park of the same tool and definition
// in the run, or an item another writer forged) is replaced. A store
// without a key is refused: an unsealed cover approves nothing
// (docs/parking.md, "Approvals that cover later calls").
func (s *Store) PutCover(ctx context.Context, c Cover) error {
	if !s.mac.Valid() {
		return fmt.Errorf("put cover of %s: the store has no sealing key", c.Tool)
	}
	item, err := attributevalue.MarshalMap(coverItem{PK: table.Cover.Key(c.RunID), SK: table.CoverSK(c.Tool, c.CurrentDigest),
		Tool: c.Tool, ParkID: c.ParkID, PinnedDigest: c.PinnedDigest, CurrentDigest: c.CurrentDigest, DecidedBy: c.DecidedBy,
		MAC: s.mac.Sum(seal.Cover, coverSealFields(c)...), ExpiresAt: s.now().Add(s.retention).Unix()})
	if err != nil {
		return fmt.Errorf("encode cover of %s: %w", c.Tool, err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		return fmt.Errorf("put cover of %s: %w", c.Tool, err)
	}
	return nil
}

// Cover reads the cover of tool's definition digest in run runID with
// one consistent GetItem projecting CoverAttributes; ErrNotFound when
// there is none. The returned Cover's fields are the item's, the run, tool
// and digest those its key names, and its Seal what the store's key finds
// of the item's mac over them: Valid, Absent (no mac) or Forged. The
// caller accepts Valid only. A mistyped attribute is an error.
func (s *Store) Cover(ctx context.Context, runID, tool, digest string) (Cover, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), ConsistentRead: aws.Bool(true), Key: coverKey(runID, tool, digest),
		ProjectionExpression: coverProjection, ExpressionAttributeNames: coverProjectionNames,
	})
	if err != nil {
		return Cover{}, fmt.Errorf("get cover of %s: %w", tool, err)
	}
	if len(out.Item) == 0 {
		return Cover{}, ErrNotFound
	}
	var it coverItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return Cover{}, fmt.Errorf("cover of %s: %w", tool, err)
	}
	// The key names the run, tool and digest; the item's own tool and
	// digest must be those too, and the seal covers all of them.
	c := Cover{RunID: runID, Tool: tool, CurrentDigest: digest, ParkID: it.ParkID, PinnedDigest: it.PinnedDigest, DecidedBy: it.DecidedBy}
	c.Seal = s.mac.Check(it.MAC, seal.Cover, coverSealFields(c)...)
	if it.Tool != tool || it.CurrentDigest != digest {
		c.Seal = seal.Forged
	}
	return c, nil
}
