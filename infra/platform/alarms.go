package platform

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/toolgate/toolgate/shared/tool"
	"github.com/toolgate/toolgate/shared/toolset"
)

// Metric filter patterns.
const (
	// ledgerUnknownPattern matches the dispatcher's JSON line for an
	// UNKNOWN ToolInvocation row (the contract's log line, shared/tool:
	// "msg":"tool invocation" with ledger_status; docs/ledger.md).
	ledgerUnknownPattern = `{ ($.` + tool.LogKeyMessage + ` = "` + tool.LogInvocation + `") && ($.` + tool.LogFieldStatus + ` = "UNKNOWN") }`
	// toolsetRefusedPattern matches the JSON line a function writes when a
	// stored toolset fails the registration check on load ("msg" is
	// toolset.RefusedLogMessage, with toolset_id, rule and reason).
	toolsetRefusedPattern = `{ ($.` + tool.LogKeyMessage + ` = "` + toolset.RefusedLogMessage + `") }`
	// executionFailedPattern matches Step Functions' log events of
	// executions that failed or timed out (logging level ERROR or more).
	executionFailedPattern = `{ ($.type = "ExecutionFailed") || ($.type = "ExecutionTimedOut") }`
)

// newAlarm defines alarm id, named toolgate-<stage>-<name>: one period
// (alarmPeriod) at or over threshold fires it, missing data does not;
// action, when not nil, is notified.
func newAlarm(scope constructs.Construct, stage, id, name, description string, metric awscloudwatch.IMetric, threshold float64, action awscloudwatch.IAlarmAction) {
	al := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmName:          jsii.String("toolgate-" + stage + "-" + name),
		AlarmDescription:   jsii.String(description),
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	if action != nil {
		al.AddAlarmAction(action)
	}
}

// alarmPeriod is every alarm's period, evaluated once.
func alarmPeriod() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(5)) }

// newAlarms defines the alarms: per function errors and throttles, ledger
// UNKNOWN rows (a metric filter on each tool function's log group),
// refused toolsets (a metric filter on the log group of each function that
// loads toolsets) and failed Solution executions (a metric filter on their
// log group). They notify the SNS topic of the props, when there is one.
func newAlarms(scope constructs.Construct, p *PlatformStackProps, fns map[string]*platformFunction, a *Access) {
	var action awscloudwatch.IAlarmAction
	if p.AlarmTopicARN != "" {
		action = awscloudwatchactions.NewSnsAction(awssns.Topic_FromTopicArn(scope, jsii.String("AlarmTopic"), jsii.String(p.AlarmTopicARN)))
	}
	namespace := "toolgate/" + p.Stage
	alarm := func(id, name, description string, metric awscloudwatch.IMetric, threshold int) {
		newAlarm(scope, p.Stage, id, name, description, metric, float64(threshold), action)
	}
	sum := &awscloudwatch.MetricOptions{Period: alarmPeriod(), Statistic: jsii.String("Sum")}
	for _, spec := range functionSpecs {
		fn := fns[spec.Name]
		alarm(spec.LogicalID+"ErrorsAlarm", spec.Name+"-errors",
			"toolgate "+spec.Name+": invocations that ended in an error (tool error codes included) in 5 minutes",
			fn.Function.MetricErrors(sum), p.ErrorAlarmThreshold)
		alarm(spec.LogicalID+"ThrottlesAlarm", spec.Name+"-throttles",
			"toolgate "+spec.Name+": throttled invocations in 5 minutes",
			fn.Function.MetricThrottles(sum), 1)
	}

	for _, spec := range functionSpecs {
		if spec.Tool {
			countMatches(scope, spec.LogicalID+"LedgerUnknownFilter", fns[spec.Name].LogGroup, namespace, metricLedgerUnknown, ledgerUnknownPattern)
		}
	}
	alarm("LedgerUnknownAlarm", "ledger-unknown",
		"toolgate: a ToolInvocation row is UNKNOWN (the side effect may have happened); a person reconciles it",
		sumOf(namespace, metricLedgerUnknown), 1)

	for _, spec := range functionSpecs {
		if spec.LoadsToolsets {
			countMatches(scope, spec.LogicalID+"ToolsetRefusedFilter", fns[spec.Name].LogGroup, namespace, metricToolsetsRefused, toolsetRefusedPattern)
		}
	}
	alarm("ToolsetRefusedAlarm", "toolset-refused",
		"toolgate: a function refused a stored toolset that fails the registration check (weaker than the catalog, or not its digest): "+
			"an item written around registration (an insider) or corrupted; nothing ran",
		sumOf(namespace, metricToolsetsRefused), 1)

	countMatches(scope, "ExecutionsFailedFilter", a.ExecutionLogs, namespace, metricExecutionsFailed, executionFailedPattern)
	alarm("ExecutionsFailedAlarm", "executions-failed",
		"toolgate: Solution executions that failed or timed out in 5 minutes",
		sumOf(namespace, metricExecutionsFailed), 1)
}

// Metrics of the namespace toolgate/<stage>, from metric filters.
const (
	metricLedgerUnknown    = "LedgerUnknownRows"
	metricToolsetsRefused  = "ToolsetsRefused"
	metricExecutionsFailed = "SolutionExecutionsFailed"
)

// countMatches defines a metric filter on logs that adds 1 to
// namespace/name for each event matching pattern.
func countMatches(scope constructs.Construct, id string, logs awslogs.ILogGroup, namespace, name, pattern string) {
	awslogs.NewMetricFilter(scope, jsii.String(id), &awslogs.MetricFilterProps{
		LogGroup:        logs,
		FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(pattern)),
		MetricNamespace: jsii.String(namespace),
		MetricName:      jsii.String(name),
		MetricValue:     jsii.String("1"),
	})
}

// sumOf is the 5-minute sum of namespace/name.
func sumOf(namespace, name string) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(namespace), MetricName: jsii.String(name),
		Period: alarmPeriod(), Statistic: jsii.String("Sum"),
	})
}
