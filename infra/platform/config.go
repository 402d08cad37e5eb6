package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/catalog"
	"github.com/toolgate/toolgate/shared/deployment"
	"github.com/toolgate/toolgate/shared/enduser"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/hostlist"
	"github.com/toolgate/toolgate/shared/review"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// Config is the app's configuration: CDK context keys "toolgate:<field>",
// from cdk.json's "context" or `cdk synth -c toolgate:<field>=<value>`.
// Lists and maps may be given as JSON text or, for lists, comma-separated.
type Config struct {
	Stage string `json:"stage"` // default "dev"; [a-z][a-z0-9-]{0,19} (deployment.CheckStage)
	// send-email (docs/tools.md). SenderIdentity defaults to the sender's
	// domain.
	Sender               string   `json:"sender"`
	SenderIdentity       string   `json:"senderIdentity"`
	SenderIdentityARN    string   `json:"senderIdentityArn"`
	CreateSenderIdentity bool     `json:"createSenderIdentity"`
	RecipientAllow       []string `json:"recipientAllow"`
	// The review notices' allow-list (docs/reviews.md, "Review notices"):
	// entries as recipientAllow's (addresses or @domain), which the
	// notify addresses of a review Task must match to receive its e-mail
	// notice, sent from the sender. Empty, the default: no notice is sent,
	// and review-request holds no SES permission.
	ReviewNotices []string `json:"reviewNotices"`
	// structured-data-fetch's host allow-list; empty: no fetch at all.
	FetchAllow []string `json:"fetchAllow"`
	// The http function's host allow-list, apart from fetchAllow; empty:
	// no http at all.
	HTTPAllow []string `json:"httpAllow"`
	// The bound of an http request body in bytes: 1..MaxHTTPRequestBytes;
	// 0 leaves the tool's default, 64 KiB.
	HTTPMaxRequestBytes int `json:"httpMaxRequestBytes"`
	// The MCP servers' host allow-list (mcp-call, and registration in the
	// publish function); empty: no MCP server at all.
	MCPAllow []string `json:"mcpAllow"`
	// How long mcp-call keeps a server's tool list, in seconds: 1..60,
	// default 5.
	MCPSchemaTTLSeconds int `json:"mcpSchemaTtlSeconds"`
	// Caller proofs (shared/caller): IAM role names whose session names
	// identify a person; empty: none, a role session is its role.
	SessionRoles []string `json:"sessionRoles"`
	// Other AWS accounts of the organisation whose principals may review
	// (12-digit ids, never a wildcard); empty, the default: reviewers are
	// principals of the deployment's own account only (docs/reviews.md).
	ReviewerAccounts []string `json:"reviewerAccounts"`
	// The direct lane's reviewers: catalog tool name to IAM principal ARN
	// patterns; empty: the direct lane is closed to gated tools.
	DirectReviewers map[string][]string `json:"directReviewers"`
	// The longest direct-lane review, in seconds: 1..31536000, default 3600.
	DirectReviewMaxSeconds int `json:"directReviewMaxSeconds"`
	// Who may set toolset-scope credentials, any end user's, and allow
	// toolset ids for them: IAM principal ARN patterns of the stack's own
	// account, as reviewer patterns (credentials.go); empty, the default:
	// nobody (docs/credentials.md).
	CredentialAdmins []string `json:"credentialAdmins"`
	// The end-user mapping: which principals (IAM principal ARN patterns
	// of the deployment's account, as reviewer patterns are written) may
	// start runs acting for which end users (id patterns, "*" and "?"
	// wildcards): [{"principal": ..., "endUser": ...}] (shared/enduser
	// Parse; TOOLGATE_END_USER_MAPPING on review-request).
	// Empty, the default: no run acts for an end user (docs/identity.md,
	// "End users").
	EndUserMapping []enduser.Entry `json:"endUserMapping"`
	// Functions override memory, timeout and reserved concurrency by name.
	Functions map[string]FunctionSettings `json:"functions"`
	// ReservedConcurrency is each stage's reserved concurrency by function
	// name: stage name (or anyStage, for every stage not named) to function
	// name to reserved concurrent executions, 0 reserving none. cdk.json
	// holds the defaults: none on dev, some on every other stage
	// (docs/infra.md, "Concurrency and throughput"). A function's
	// Functions[name].ReservedConcurrency, when set, wins. Nil reserves
	// nothing.
	ReservedConcurrency map[string]map[string]int `json:"reservedConcurrency"`
	// The ledger table: "retain" (default), "destroy" or
	// "retain-on-update-or-delete"; deletion protection default true.
	RemovalPolicy      string `json:"removalPolicy"`
	DeletionProtection bool   `json:"deletionProtection"`
	// The on-demand maxima of the ledger table and of its index
	// (reviews-by-status), in request units per second: defaults
	// defaultTableThroughput and defaultIndexThroughput.
	TableThroughput Throughput `json:"tableThroughput"`
	IndexThroughput Throughput `json:"indexThroughput"`
	// Index Query statements name the index's partition key prefix too
	// (dynamodb:LeadingKeys; PlatformStackProps.IndexLeadingKeys); default
	// false.
	IndexLeadingKeys bool `json:"indexLeadingKeys"`
	// Where every function exports its spans: "off" (the default) or
	// "otlp:" and an OTLP/HTTP receiver's base URL (TOOLGATE_TRACING,
	// functionconfig.ParseTracing; docs/infra.md, "Tracing").
	Tracing string `json:"tracing"`
	// Every log group's retention in days (a CloudWatch Logs value); default 90.
	LogRetentionDays int `json:"logRetentionDays"`
	// The SNS topic alarms notify; empty: alarms without actions.
	AlarmTopicARN       string `json:"alarmTopicArn"`
	ErrorAlarmThreshold int    `json:"errorAlarmThreshold"`
	// SAMLocal makes a template for sam local invoke (docs/infra.md), never
	// for deployment.
	SAMLocal bool `json:"samLocal"`
	// Who may subscribe webhooks, manage them and redrive their dead-letter
	// queue: IAM principal ARN patterns of the stack's own account, as
	// credentialAdmins; empty, the default: nobody, with a warning.
	WebhookAdmins []string `json:"webhookAdmins"`
	// Who may decide parked calls besides a run's starter (an ungated
	// step's approve and reject, any resume) and who may cancel any park,
	// stopping its run: IAM principal ARN patterns of the stack's own
	// account, as credentialAdmins (docs/parking.md, "Deciding"); empty,
	// the default: nobody but the starter (TOOLGATE_PARK_DECIDERS,
	// TOOLGATE_PARK_OPERATORS on review-decision).
	ParkDeciders  []string `json:"parkDeciders"`
	ParkOperators []string `json:"parkOperators"`
	// Who may fork any run of the stage besides its starter: IAM principal
	// ARN patterns of the stack's own account, as parkOperators
	// (docs/fork.md, "Who may fork"); empty, the default: nobody but the
	// starter (TOOLGATE_FORK_OPERATORS on review-decision).
	ForkOperators []string `json:"forkOperators"`
	// Who may reconcile a call whose outcome is unknown (toolgate ledger
	// reconcile: applied, with its result, or not applied): IAM principal
	// ARN patterns of the stack's own account, as credentialAdmins
	// (docs/fork.md, "Reconciling"); never the run's starter nor the
	// call's approver. Empty, the default: the park operators
	// (TOOLGATE_RECONCILERS on review-decision).
	Reconcilers []string `json:"reconcilers"`
	// The webhook hosts' allow-list, entries as httpAllow's; empty, the
	// default: no webhook endpoint is accepted.
	WebhookAllow []string `json:"webhookAllow"`
	// The delivery retry schedule, "5s,5m,30m,2h" (webhook.ParseSchedule:
	// 1 to 20 delays of 1 s to 12 h); empty, the default:
	// webhook.DefaultSchedule.
	WebhookSchedule string `json:"webhookSchedule"`
	// Who may add, list, rotate and remove inbound sources and schedules
	// and redrive the inbound dead-letter queue: IAM principal ARN
	// patterns of the stack's own account, as webhookAdmins; empty, the
	// default: nobody, with a warning (TOOLGATE_INBOUND_OPERATORS on the
	// sources function).
	InboundOperators []string `json:"inboundOperators"`
	// webhook-receiver's reserved concurrency on every stage, dev
	// included: its Function URL is public, and the reservation caps what
	// a flood of requests takes. 0..MaxInboundReceiverConcurrency, 0
	// reserving none; defaultConfig's is DefaultInboundReceiverConcurrency.
	// A reservedConcurrency of the function in functions or
	// reservedConcurrency wins.
	InboundReceiverConcurrency *int `json:"inboundReceiverConcurrency"`
	// How long an inbound event item is kept, in days:
	// MinInboundRetentionDays..MaxInboundRetentionDays, 0 meaning
	// DefaultInboundRetentionDays (TOOLGATE_INBOUND_RETENTION_DAYS).
	InboundRetentionDays int `json:"inboundRetentionDays"`
}

// MaxHTTPRequestBytes is the largest bound of an http request body,
// 192 KiB: the body travels in the Task's input, which Step Functions
// caps at 256 KiB with the rest of the envelope (Step Functions quotas,
// "Maximum input or output size for a task, state, or execution"), and
// the http tool refuses a larger TOOLGATE_HTTP_MAX_REQUEST_BYTES at cold
// start.
const MaxHTTPRequestBytes = 192 << 10

// contextPrefix prefixes every context key of Config.
const contextPrefix = "toolgate:"

// defaultConfig is what synth uses with no context: fine for synth and
// tests, and flagged by warnings (example.com sender, no alarm topic).
func defaultConfig() Config {
	return Config{
		Stage:                  "dev",
		Sender:                 "toolgate@example.com",
		RecipientAllow:         []string{"@example.com"},
		RemovalPolicy:          "retain",
		DeletionProtection:     true,
		TableThroughput:        defaultTableThroughput,
		IndexThroughput:        defaultIndexThroughput,
		LogRetentionDays:       90,
		DirectReviewMaxSeconds: review.DefaultDirectMaxTimeout,
		Tracing:                functionconfig.TracingOff,
		InboundReceiverConcurrency: func() *int {
			n := DefaultInboundReceiverConcurrency
			return &n
		}(),
	}
}

// LoadConfig reads Config from lookup (the app's TryGetContext) over
// defaultConfig, then checks it with the functions' own parsers, so that a
// value a function would refuse at cold start fails the synth instead.
func LoadConfig(lookup func(key string) any) (Config, error) {
	cfg := defaultConfig()
	var raw = map[string]json.RawMessage{}
	for _, key := range configKeys() {
		v := lookup(contextPrefix + key)
		if v == nil {
			continue
		}
		text, err := contextJSON(v, key)
		if err != nil {
			return cfg, err
		}
		raw[key] = text
	}
	all, _ := json.Marshal(raw)
	if err := json.Unmarshal(all, &cfg); err != nil {
		return cfg, fmt.Errorf("context %s...: %w", contextPrefix, err)
	}
	return cfg, cfg.check()
}

// configKeys are Config's JSON field names.
func configKeys() []string {
	var keys []string
	b, _ := json.Marshal(Config{Functions: map[string]FunctionSettings{}})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// listKeys take comma-separated text as well as a JSON list.
var listKeys = map[string]bool{"recipientAllow": true, "reviewNotices": true, "fetchAllow": true, "httpAllow": true, "mcpAllow": true, "sessionRoles": true, "reviewerAccounts": true, "credentialAdmins": true,
	"webhookAdmins": true, "webhookAllow": true, "inboundOperators": true}

// objectKeys take JSON text only.
var objectKeys = map[string]bool{"functions": true, "directReviewers": true, "reservedConcurrency": true, "endUserMapping": true,
	"tableThroughput": true, "indexThroughput": true}

// contextJSON turns a context value into JSON for Config's field key: a
// value from cdk.json arrives typed, one from -c as text.
func contextJSON(v any, key string) (json.RawMessage, error) {
	if p, ok := v.(*string); ok {
		v = *p
	}
	s, isText := v.(string)
	if !isText {
		b, err := json.Marshal(v)
		return b, err
	}
	s = strings.TrimSpace(s)
	switch {
	case listKeys[key] && !strings.HasPrefix(s, "["):
		var l []string
		for _, e := range strings.Split(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				l = append(l, e)
			}
		}
		b, _ := json.Marshal(l)
		return b, nil
	case objectKeys[key] || listKeys[key]:
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("context %s%s: not JSON: %s", contextPrefix, key, s)
		}
		return json.RawMessage(s), nil
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil || s == "true" || s == "false" {
		return json.RawMessage(s), nil
	}
	b, _ := json.Marshal(s)
	return b, nil
}

// retentionDays maps the day counts CloudWatch Logs accepts to the enum.
var retentionDays = map[int]awslogs.RetentionDays{
	1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
	7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
	60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
	150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
	1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
	2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
	3653: awslogs.RetentionDays_TEN_YEARS,
}

var removalPolicies = map[string]awscdk.RemovalPolicy{
	"retain":                     awscdk.RemovalPolicy_RETAIN,
	"destroy":                    awscdk.RemovalPolicy_DESTROY,
	"retain-on-update-or-delete": awscdk.RemovalPolicy_RETAIN_ON_UPDATE_OR_DELETE,
}

var topicARN = regexp.MustCompile(`^arn:aws(-[a-z]+)*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$`)

// roleName is an IAM role name (IAM API Reference, CreateRole RoleName)
// without the comma IAM allows: TOOLGATE_SESSION_ROLES is comma-separated.
var roleName = regexp.MustCompile(`^[A-Za-z0-9_+=.@-]{1,64}$`)

// check validates the configuration and normalises the sender (the form
// send-email gives SES, which the ses:FromAddress condition must equal).
func (c *Config) check() error {
	var problems []error
	// The publish function's own check (it refuses another stage at cold
	// start): 1 to 20 of [a-z0-9-], starting with a letter, never "_",
	// which ends the stage in a state machine's name (toolgate-<stage>_*).
	if err := deployment.CheckStage(c.Stage); err != nil {
		problems = append(problems, err)
	}
	if c.SenderIdentity == "" {
		if _, domain, ok := strings.Cut(c.Sender, "@"); ok {
			c.SenderIdentity = domain
		}
	}
	// send-email's own parser checks the sender, the allow-list and that
	// the identity authorises the sender; the ARN here is only a shape.
	ident := c.SenderIdentityARN
	if ident == "" {
		ident = "arn:aws:ses:us-east-1:123456789012:identity/" + c.SenderIdentity
	}
	env := map[string]string{
		functionconfig.EnvSender:            c.Sender,
		functionconfig.EnvSenderIdentityARN: ident,
		functionconfig.EnvRecipientAllow:    strings.Join(c.RecipientAllow, ","),
	}
	if se, err := functionconfig.SendEmailFromEnv(func(k string) string { return env[k] }); err != nil {
		problems = append(problems, err)
	} else {
		c.Sender = se.From
		// The same list becomes the ses:Recipients condition of
		// send-email's role (sendAsTheSender), which must fit IAM's limit.
		if n := recipientConditionChars(se.Allow.IAMPatterns()); n > maxRecipientConditionChars {
			problems = append(problems, fmt.Errorf("recipientAllow: %d entries make send-email's ses:Recipients IAM condition about %d characters, over the %d it may take of IAM's %d-character limit on a role's inline policies (the rest of send-email's policy needs the others): list fewer entries, e.g. one @domain entry for many addresses of a domain",
				se.Allow.Len(), n, maxRecipientConditionChars, rolePolicyChars))
		}
	}
	// review-request's own parser of the notices allow-list and sender;
	// the list becomes the ses:Recipients condition of its role
	// (sendReviewNotices), which must fit IAM's limit.
	if n, err := functionconfig.ParseReviewNotices(c.ReviewNotices, c.Sender); err != nil {
		problems = append(problems, fmt.Errorf("reviewNotices: %w", err))
	} else if chars := recipientConditionChars(n.Allow.IAMPatterns()); n.On() && chars > maxNoticeConditionChars {
		problems = append(problems, fmt.Errorf("reviewNotices: %d entries make review-request's ses:Recipients IAM condition about %d characters, over the %d it may take of IAM's %d-character limit on a role's inline policies (the rest of review-request's policy needs the others): list fewer entries, e.g. one @domain entry for many addresses of a domain",
			n.Allow.Len(), chars, maxNoticeConditionChars, rolePolicyChars))
	}
	if _, err := functionconfig.ParseFetchAllow(c.FetchAllow); err != nil {
		problems = append(problems, fmt.Errorf("fetchAllow: %w", err))
	}
	// The http function's own parser (hostlist entries: host[:port], "*."
	// wildcards, public suffixes refused).
	if _, err := functionconfig.ParseHTTPAllow(c.HTTPAllow); err != nil {
		problems = append(problems, fmt.Errorf("httpAllow: %w", err))
	}
	// Every function's own parser of TOOLGATE_TRACING; its error names the
	// variable, this one the context key it came from.
	if c.Tracing == "" {
		c.Tracing = functionconfig.TracingOff
	}
	if _, err := functionconfig.ParseTracing(c.Tracing); err != nil {
		problems = append(problems, fmt.Errorf("context %stracing: %w", contextPrefix, err))
	}
	if c.HTTPMaxRequestBytes < 0 || c.HTTPMaxRequestBytes > MaxHTTPRequestBytes {
		problems = append(problems, fmt.Errorf("httpMaxRequestBytes %d: want 1..%d (0: the tool's default, 64 KiB)", c.HTTPMaxRequestBytes, MaxHTTPRequestBytes))
	}
	// MCP servers' hosts are listed as the http tool's are.
	if _, err := hostlist.ParseList(c.MCPAllow); err != nil {
		problems = append(problems, fmt.Errorf("mcpAllow: %w", err))
	}
	if c.MCPSchemaTTLSeconds < 0 || c.MCPSchemaTTLSeconds > MaxMCPSchemaTTLSeconds {
		problems = append(problems, fmt.Errorf("mcpSchemaTtlSeconds %d: want 1..%d (0: %d)", c.MCPSchemaTTLSeconds, MaxMCPSchemaTTLSeconds, DefaultMCPSchemaTTLSeconds))
	}
	for name, s := range c.Functions {
		if specOf(name).Name == "" {
			problems = append(problems, fmt.Errorf("functions: no function %q", name))
		}
		if s.MemoryMB != 0 && (s.MemoryMB < 128 || s.MemoryMB > 10240) {
			problems = append(problems, fmt.Errorf("functions.%s.memoryMB %d: want 128..10240", name, s.MemoryMB))
		}
		if s.TimeoutSeconds != 0 && (s.TimeoutSeconds < 10 || s.TimeoutSeconds > 900) {
			problems = append(problems, fmt.Errorf("functions.%s.timeoutSeconds %d: want 10..900", name, s.TimeoutSeconds))
		}
		if max := specOf(name).catalogTimeout(); max > 0 && s.TimeoutSeconds > max {
			problems = append(problems, fmt.Errorf("functions.%s.timeoutSeconds %d: more than the catalog's function_timeout_seconds, %d s, from which the tool's Task timeout is compiled (shared/catalog)", name, s.TimeoutSeconds, max))
		}
		if s.ReservedConcurrency < 0 {
			problems = append(problems, fmt.Errorf("functions.%s.reservedConcurrency %d: want 0 or more", name, s.ReservedConcurrency))
		}
	}
	problems = append(problems, c.checkReservedConcurrency()...)
	problems = append(problems, c.TableThroughput.check("tableThroughput")...)
	problems = append(problems, c.IndexThroughput.check("indexThroughput")...)
	if _, ok := removalPolicies[c.RemovalPolicy]; !ok {
		problems = append(problems, fmt.Errorf("removalPolicy %q: want retain, destroy or retain-on-update-or-delete", c.RemovalPolicy))
	}
	if _, ok := retentionDays[c.LogRetentionDays]; !ok {
		problems = append(problems, fmt.Errorf("logRetentionDays %d: not a CloudWatch Logs retention", c.LogRetentionDays))
	}
	if c.AlarmTopicARN != "" && !topicARN.MatchString(c.AlarmTopicARN) {
		problems = append(problems, fmt.Errorf("alarmTopicArn %q: not an SNS topic ARN", c.AlarmTopicARN))
	}
	if c.ErrorAlarmThreshold < 0 {
		problems = append(problems, fmt.Errorf("errorAlarmThreshold %d: want 0 (default 5) or more", c.ErrorAlarmThreshold))
	}
	problems = append(problems, c.checkCallers()...)
	problems = append(problems, c.checkCredentialAdmins()...)
	problems = append(problems, c.checkWebhooks()...)
	problems = append(problems, c.checkInbound()...)
	problems = append(problems, c.checkParks()...)
	return errors.Join(problems...)
}

// anyStage is the key of Config.ReservedConcurrency for every stage it
// does not name.
const anyStage = "*"

// checkReservedConcurrency checks Config.ReservedConcurrency: stage names
// the publish function accepts (or anyStage), functions that exist, and
// counts of 0 or more.
func (c *Config) checkReservedConcurrency() []error {
	var problems []error
	for _, stage := range slices.Sorted(maps.Keys(c.ReservedConcurrency)) {
		if stage != anyStage {
			if err := deployment.CheckStage(stage); err != nil {
				problems = append(problems, fmt.Errorf("reservedConcurrency: %q is neither a stage nor %q: %w", stage, anyStage, err))
			}
		}
		fns := c.ReservedConcurrency[stage]
		for _, name := range slices.Sorted(maps.Keys(fns)) {
			if specOf(name).Name == "" {
				problems = append(problems, fmt.Errorf("reservedConcurrency.%s: no function %q", stage, name))
			}
			if n := fns[name]; n < 0 {
				problems = append(problems, fmt.Errorf("reservedConcurrency.%s.%s %d: want 0 (none) or more", stage, name, n))
			}
		}
	}
	return problems
}

// functionSettings are the functions' settings on c's stage: Functions,
// with each function's reserved concurrency taken from the stage's
// ReservedConcurrency (its own entry, else anyStage's) where Functions sets
// none, and webhook-receiver's from InboundReceiverConcurrency where
// neither does (its public URL is capped on every stage; nil: none).
func (c *Config) functionSettings() map[string]FunctionSettings {
	stageDefaults, ok := c.ReservedConcurrency[c.Stage]
	if !ok {
		stageDefaults = c.ReservedConcurrency[anyStage]
	}
	out := map[string]FunctionSettings{}
	for _, spec := range functionSpecs {
		s := c.Functions[spec.Name]
		if s.ReservedConcurrency == 0 {
			s.ReservedConcurrency = stageDefaults[spec.Name]
		}
		if s.ReservedConcurrency == 0 && spec.Name == fnWebhookReceiver && c.InboundReceiverConcurrency != nil {
			s.ReservedConcurrency = *c.InboundReceiverConcurrency
		}
		out[spec.Name] = s
	}
	return out
}

// checkCallers checks the caller proofs' and the direct lane's
// configuration, naming the context keys, then gives review-request's own
// parser the environment the app would set (it reads the session roles as
// every function does).
func (c *Config) checkCallers() []error {
	var problems []error
	for _, r := range c.SessionRoles {
		if !roleName.MatchString(r) {
			problems = append(problems, fmt.Errorf("sessionRoles %q: not an IAM role name (1 to 64 of A-Z a-z 0-9 _+=.@-; no path, no comma)", r))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(c.DirectReviewers)) {
		patterns := c.DirectReviewers[t]
		if _, ok := catalog.Default().Lookup(t); !ok {
			problems = append(problems, fmt.Errorf("directReviewers: no tool %q in the catalog (shared/catalog)", t))
		}
		switch {
		case len(patterns) == 0:
			problems = append(problems, fmt.Errorf("directReviewers.%s: no reviewer patterns: leave the tool out to close its direct lane", t))
		case len(patterns) > reviewer.MaxReviewers:
			problems = append(problems, fmt.Errorf("directReviewers.%s: %d reviewer patterns, over %d", t, len(patterns), reviewer.MaxReviewers))
		}
		for _, p := range patterns {
			if err := reviewer.CheckPattern(p); err != nil {
				problems = append(problems, fmt.Errorf("directReviewers.%s: %w", t, err))
			}
		}
	}
	// Each entry one account id, as the function and the resource policy
	// read it: the list is normalised here, so that what is validated is
	// what is deployed.
	for _, a := range c.ReviewerAccounts {
		if !caller.ValidAccount(a) {
			problems = append(problems, fmt.Errorf("reviewerAccounts: %q is not an AWS account id (12 digits; list account ids, never a wildcard)", a))
		}
	}
	if accounts, err := caller.ParseAccounts(strings.Join(c.ReviewerAccounts, ",")); err != nil {
		problems = append(problems, fmt.Errorf("reviewerAccounts: %w (list account ids, never a wildcard)", err))
	} else {
		c.ReviewerAccounts = accounts
	}
	// The end-user mapping, by the functions' own parser (the stack's
	// account is not known at synth: each entry's account is checked
	// against it at cold start).
	if _, err := enduser.Parse([]byte(endUserMappingJSON(c.EndUserMapping)), ""); err != nil {
		problems = append(problems, fmt.Errorf("endUserMapping: %w", err))
	}
	if c.DirectReviewMaxSeconds < 1 || c.DirectReviewMaxSeconds > review.MaxTimeout {
		problems = append(problems, fmt.Errorf("directReviewMaxSeconds %d: want 1..%d (a task token lives at most a year)", c.DirectReviewMaxSeconds, review.MaxTimeout))
	}
	if len(problems) > 0 {
		return problems
	}
	env := map[string]string{
		envTable:                           "toolgate-" + c.Stage,
		envStage:                           c.Stage,
		"AWS_REGION":                       "us-east-1",    // Lambda sets it; the STS endpoint's default
		caller.EnvAccount:                  "123456789012", // the stack's account, unknown at synth
		envSessionRoles:                    strings.Join(c.SessionRoles, ","),
		envDirectReviewMaxSecs:             strconv.Itoa(c.DirectReviewMaxSeconds),
		functionconfig.EnvExternalKeyParam: functionconfig.ExternalKeyParam(c.Stage),
		enduser.EnvKeyParam:                functionconfig.EndUserKeyParam(c.Stage),
	}
	if len(c.DirectReviewers) > 0 {
		env[envDirectReviewers] = directReviewersJSON(c.DirectReviewers)
	}
	if _, err := functionconfig.ReviewRequestFromEnv(func(k string) string { return env[k] }); err != nil {
		problems = append(problems, fmt.Errorf("review-request: %w", err))
	}
	return problems
}

// endUserMappingJSON is the mapping as TOOLGATE_END_USER_MAPPING holds
// it (shared/enduser Parse); "" for none.
func endUserMappingJSON(m []enduser.Entry) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// specOf returns the spec of the function named name (the zero spec for
// none).
func specOf(name string) functionSpec {
	for _, s := range functionSpecs {
		if s.Name == name {
			return s
		}
	}
	return functionSpec{}
}

// checkParks checks the park deciders and operators, the reconcilers and
// the fork operators, as the function reads them: reviewer patterns
// (reviewer.CheckPattern), at most
// reviewer.MaxReviewers each; review-decision refuses, at cold start, a
// pattern naming another account than the stack's.
func (c *Config) checkParks() []error {
	var problems []error
	for name, list := range map[string][]string{"parkDeciders": c.ParkDeciders, "parkOperators": c.ParkOperators, "reconcilers": c.Reconcilers,
		"forkOperators": c.ForkOperators} {
		if len(list) > reviewer.MaxReviewers {
			problems = append(problems, fmt.Errorf("%s: %d patterns, over %d", name, len(list), reviewer.MaxReviewers))
		}
		for _, p := range list {
			if err := reviewer.CheckPattern(p); err != nil {
				problems = append(problems, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	sort.Slice(problems, func(i, j int) bool { return problems[i].Error() < problems[j].Error() })
	return problems
}
