package platform

import (
	"crypto/md5"
	"encoding/hex"
	"regexp"
	"strings"
	"sync"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The platform stack is assembled from one construct per concern
// (NewFunctions, NewLedgerSecrets, NewReviews, NewAccess, NewPublishing, NewCredentials,
// NewWebhooks, NewInbound, NewParameters, NewAlarms), each a direct child of the stack. A
// construct adds its id to its children's paths, and the CDK derives a
// logical ID from the path: the stacks here allocate logical IDs from the
// path without the concern's id (concernStack), so that every resource
// keeps the logical ID it had as the stack's own child, and a deploy of
// the re-laid app replaces nothing (docs/infra.md, "Template
// equivalence"; TestTemplateSummary).

// concernStack is a stack whose concern constructs (newConcern, its
// direct children) add no part to their resources' logical IDs.
type concernStack struct {
	awscdk.Stack
}

// newConcernStack defines a stack (awscdk.NewStack's arguments) whose
// logical IDs leave out the concern constructs defined on it.
func newConcernStack(scope constructs.Construct, id string, props *awscdk.StackProps) *concernStack {
	s := &concernStack{}
	awscdk.NewStack_Override(s, scope, jsii.String(id), props)
	return s
}

// concernPaths holds the construct path of every concern construct
// (newConcern): a concernStack leaves those out of logical IDs.
var concernPaths sync.Map

// newConcern defines the construct of one concern, id, on scope (a
// concernStack; on another stack it is an ordinary construct, and adds
// its id to logical IDs).
func newConcern(scope constructs.Construct, id string) constructs.Construct {
	c := constructs.NewConstruct(scope, jsii.String(id))
	concernPaths.Store(*c.Node().Path(), true)
	return c
}

// AllocateLogicalId overrides awscdk.Stack's: the CDK's own allocation
// (makeUniqueId of the element's path below the stack) of the path with
// the concern's id left out.
func (s *concernStack) AllocateLogicalId(element awscdk.CfnElement) *string {
	path := strings.Split(*element.Node().Path(), "/")
	stack := strings.Split(*s.Node().Path(), "/")
	components := path[len(stack):]
	if _, ok := concernPaths.Load(strings.Join(append(stack, components[0]), "/")); ok && len(components) > 1 {
		components = components[1:]
	}
	return jsii.String(uniqueID(components))
}

// The CDK's makeUniqueId (aws-cdk-lib core/lib/private/uniqueid): a
// single component is the ID as is (alphanumerics only); otherwise the
// components without "Resource", duplicates removed, joined, and the
// first 8 hex digits, upper case, of the MD5 of the path. "Default" is
// left out of both.
const (
	hiddenID          = "Default"
	hiddenFromHumanID = "Resource"
	maxHumanLen       = 240
	maxIDLen          = 255
)

var nonAlphanumeric = regexp.MustCompile(`[^A-Za-z0-9]`)

func uniqueID(components []string) string {
	var c []string
	for _, x := range components {
		if x != hiddenID {
			c = append(c, x)
		}
	}
	if len(c) == 1 {
		if candidate := nonAlphanumeric.ReplaceAllString(c[0], ""); len(candidate) <= maxIDLen {
			return candidate
		}
	}
	sum := md5.Sum([]byte(strings.Join(c, "/")))
	hash := strings.ToUpper(hex.EncodeToString(sum[:]))[:8]
	var human strings.Builder
	var kept []string
	for _, x := range c {
		// removeDupes: a component the previous kept one ends with is left out.
		if len(kept) == 0 || !strings.HasSuffix(kept[len(kept)-1], x) {
			kept = append(kept, x)
		}
	}
	for _, x := range kept {
		if x != hiddenFromHumanID {
			human.WriteString(nonAlphanumeric.ReplaceAllString(x, ""))
		}
	}
	h := human.String()
	if len(h) > maxHumanLen {
		h = h[:maxHumanLen]
	}
	return h + hash
}

// FunctionsProps configure NewFunctions.
type FunctionsProps struct {
	// Platform is the platform's configuration (its stage, table,
	// assets, function settings and each function's own settings).
	Platform *PlatformStackProps
}

// Functions is the platform's functions (functionSpecs), each with its
// own role, log group and environment, and the aliases of its lanes.
type Functions struct {
	constructs.Construct
	// ByName holds each function by its name (functionSpec.Name).
	ByName map[string]*platformFunction
}

// NewFunctions defines the platform's functions (newFunctions) under the
// concern id on scope, the platform stack.
func NewFunctions(scope constructs.Construct, id string, props *FunctionsProps) *Functions {
	c := newConcern(scope, id)
	return &Functions{Construct: c, ByName: newFunctions(c, props.Platform, newLedgerARNs(props.Platform.TableName))}
}

// LedgerSecretsProps configure NewLedgerSecrets.
type LedgerSecretsProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
}

// NewLedgerSecrets defines the provisioning function of the tool
// functions' ledger secrets and its two custom resources (newLedgerSecrets).
func NewLedgerSecrets(scope constructs.Construct, id string, props *LedgerSecretsProps) *LedgerSecrets {
	c := newConcern(scope, id)
	ls := newLedgerSecrets(c, props.Platform, props.Functions.ByName)
	ls.Construct = c
	return ls
}

// ReviewsProps configure NewReviews.
type ReviewsProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
}

// Reviews is what reviewers reach: review-decision's IAM-authorised
// Function URL (logical ID ReviewDecisionUrl) and its permissions for the
// organisation's reviewer accounts (grantReviewerAccounts).
type Reviews struct {
	constructs.Construct
	DecisionURL awslambda.FunctionUrl
}

// NewReviews defines review-decision's Function URL and reviewer
// accounts' permissions.
func NewReviews(scope constructs.Construct, id string, props *ReviewsProps) *Reviews {
	c := newConcern(scope, id)
	fn := props.Functions.ByName[fnReviewDecision]
	url := fn.Function.AddFunctionUrl(&awslambda.FunctionUrlOptions{
		AuthType: awslambda.FunctionUrlAuthType_AWS_IAM,
	})
	overrideLogicalID(url, "ReviewDecisionUrl")
	grantReviewerAccounts(fn, props.Platform.ReviewerAccounts)
	return &Reviews{Construct: c, DecisionURL: url}
}

// AccessProps configure NewAccess.
type AccessProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
}

// NewAccess defines the Solution execution role and log group and the
// Publisher, Reviewer and Operator managed policies (newAccess).
func NewAccess(scope constructs.Construct, id string, props *AccessProps) *Access {
	c := newConcern(scope, id)
	a := newAccess(c, props.Platform, props.Functions.ByName, newLedgerARNs(props.Platform.TableName))
	a.Construct = c
	return a
}

// PublishingProps configure NewPublishing.
type PublishingProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
	Access    *Access
}

// Publishing is the publish function's IAM-authorised Function URL
// (logical ID PublishUrl); NewPublishing also gives its role what
// publishing needs (grantPublishing).
type Publishing struct {
	constructs.Construct
	URL awslambda.FunctionUrl
}

// NewPublishing defines the publish URL and the publish role's grants.
func NewPublishing(scope constructs.Construct, id string, props *PublishingProps) *Publishing {
	c := newConcern(scope, id)
	fn := props.Functions.ByName[fnPublish]
	url := newPublishURL(fn)
	grantPublishing(props.Platform, fn, props.Access)
	return &Publishing{Construct: c, URL: url}
}

// ParametersProps configure NewParameters.
type ParametersProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
	Access    *Access
	// DecisionURL and PublishURL are the Function URLs' URLs.
	DecisionURL, PublishURL *string
}

// NewParameters defines the SSM parameters toolgate publish and the CLI
// read (newParameters).
func NewParameters(scope constructs.Construct, id string, props *ParametersProps) constructs.Construct {
	c := newConcern(scope, id)
	newParameters(c, props.Platform, props.Functions.ByName, props.Access, props.DecisionURL, props.PublishURL)
	return c
}

// AlarmsProps configure NewAlarms.
type AlarmsProps struct {
	Platform  *PlatformStackProps
	Functions *Functions
	Access    *Access
}

// NewAlarms defines the alarms and their metric filters (newAlarms).
func NewAlarms(scope constructs.Construct, id string, props *AlarmsProps) constructs.Construct {
	c := newConcern(scope, id)
	newAlarms(c, props.Platform, props.Functions.ByName, props.Access)
	return c
}
