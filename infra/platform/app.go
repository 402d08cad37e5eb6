package platform

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// JSIIDefaults sets what docs/infra.md asks of jsii when the caller (make
// synth) has not: its package cache under cacheRoot (about 210 MB, inside
// the repository) and no Node 20 end-of-life banner.
func JSIIDefaults(cacheRoot string) {
	if os.Getenv("JSII_RUNTIME_PACKAGE_CACHE_ROOT") == "" {
		if abs, err := filepath.Abs(cacheRoot); err == nil {
			os.Setenv("JSII_RUNTIME_PACKAGE_CACHE_ROOT", abs)
		}
	}
	if os.Getenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION") == "" {
		os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	}
	// The jsii client was created (not started) while the packages' init
	// functions registered their types, with the environment of that moment:
	// close it so that the next one takes the settings above.
	jsii.Close()
}

// CheckAssets reports the first function whose bootstrap is missing from
// dir (<dir>/<function>/bootstrap, which make build writes), by name: the
// CDK's own message does not say how to make it.
func CheckAssets(dir string) error {
	for _, spec := range functionSpecs {
		p := filepath.Join(dir, spec.Name, "bootstrap")
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("no bootstrap for %s: %w", spec.Name, err)
		}
	}
	return nil
}

// Stack names: cdk.out/<name>.template.json.
func ledgerStackName(stage string) string   { return "Toolgate-" + stage + "-Ledger" }
func platformStackName(stage string) string { return "Toolgate-" + stage }

// NewApp defines both stacks of cfg on app, the ledger stack and the
// platform stack, with assets (each function's bootstrap directory) under
// dir, and the app's tags and warnings.
func NewApp(app awscdk.App, cfg Config, dir string) (*LedgerStack, *PlatformStack) {
	awscdk.Tags_Of(app).Add(jsii.String("project"), jsii.String("toolgate"), nil)
	awscdk.Tags_Of(app).Add(jsii.String("toolgate:stage"), jsii.String(cfg.Stage), nil)
	tableName := "toolgate-" + cfg.Stage
	ledger := NewLedgerStack(app, ledgerStackName(cfg.Stage), &LedgerStackProps{
		StackProps: awscdk.StackProps{Description: jsii.String("toolgate " + cfg.Stage + ": the ledger table")},
		LedgerProps: LedgerProps{
			TableName:          tableName,
			RemovalPolicy:      removalPolicies[cfg.RemovalPolicy],
			DeletionProtection: jsii.Bool(cfg.DeletionProtection),
			TableThroughput:    cfg.TableThroughput,
			IndexThroughput:    cfg.IndexThroughput,
		},
	})
	platform := NewPlatformStack(app, platformStackName(cfg.Stage), &PlatformStackProps{
		StackProps: awscdk.StackProps{Description: jsii.String("toolgate " + cfg.Stage + ": functions, roles, policies, parameters and alarms")},
		Stage:      cfg.Stage,
		TableName:  tableName,
		AssetsDir:  dir,
		Functions:  cfg.functionSettings(),
		Sender: SenderProps{
			Address: cfg.Sender, Identity: cfg.SenderIdentity,
			IdentityARN: cfg.SenderIdentityARN, CreateIdentity: cfg.CreateSenderIdentity,
		},
		RecipientAllow:         cfg.RecipientAllow,
		ReviewNotices:          cfg.ReviewNotices,
		FetchAllow:             cfg.FetchAllow,
		HTTPAllow:              cfg.HTTPAllow,
		HTTPMaxRequestBytes:    cfg.HTTPMaxRequestBytes,
		MCPAllow:               cfg.MCPAllow,
		MCPSchemaTTLSeconds:    cfg.MCPSchemaTTLSeconds,
		SessionRoles:           cfg.SessionRoles,
		ReviewerAccounts:       cfg.ReviewerAccounts,
		DirectReviewers:        cfg.DirectReviewers,
		DirectReviewMaxSeconds: cfg.DirectReviewMaxSeconds,
		CredentialAdmins:       cfg.CredentialAdmins,
		EndUserMapping:         cfg.EndUserMapping,
		LogRetention:           retentionDays[cfg.LogRetentionDays],
		AlarmTopicARN:          cfg.AlarmTopicARN,
		ErrorAlarmThreshold:    cfg.ErrorAlarmThreshold,
		SAMLocal:               cfg.SAMLocal,
		IndexLeadingKeys:       cfg.IndexLeadingKeys,
		Tracing:                cfg.Tracing,
		WebhookAdmins:          cfg.WebhookAdmins,
		ParkDeciders:           cfg.ParkDeciders,
		ParkOperators:          cfg.ParkOperators,
		ForkOperators:          cfg.ForkOperators,
		Reconcilers:            cfg.Reconcilers,
		WebhookAllow:           cfg.WebhookAllow,
		WebhookSchedule:        cfg.WebhookSchedule,
		InboundOperators:       cfg.InboundOperators,
		InboundRetentionDays:   cfg.InboundRetentionDays,
	})
	platform.AddStackDependency(ledger.Stack, jsii.String("the functions use the ledger table by name"))
	warn := awscdk.Annotations_Of(platform.Stack)
	if cfg.AlarmTopicARN == "" {
		warn.AddWarningV2(jsii.String("toolgate:no-alarm-topic"),
			jsii.String("no alarm topic: set -c toolgate:alarmTopicArn=<SNS topic ARN> so that alarms notify someone"), nil)
	}
	if cfg.SAMLocal {
		warn.AddWarningV2(jsii.String("toolgate:sam-local"),
			jsii.String("a template for sam local invoke: never deploy it"), nil)
	}
	if cfg.Sender == defaultConfig().Sender {
		warn.AddWarningV2(jsii.String("toolgate:example-sender"),
			jsii.String("send-email sends as toolgate@example.com: set -c toolgate:sender=<verified address>"), nil)
	}
	if len(cfg.WebhookAdmins) == 0 {
		warn.AddWarningV2(jsii.String("toolgate:no-webhook-admins"),
			jsii.String("no webhook admins: set -c toolgate:webhookAdmins=<principal ARN patterns> so that someone may subscribe webhooks"), nil)
	}
	if len(cfg.InboundOperators) == 0 {
		warn.AddWarningV2(jsii.String("toolgate:no-inbound-operators"),
			jsii.String("no inbound operators: set -c toolgate:inboundOperators=<principal ARN patterns> so that someone may add inbound sources and schedules"), nil)
	}
	return ledger, platform
}
