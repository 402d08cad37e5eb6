package sources

import (
	"fmt"
	"regexp"

	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/reviewer"
)

// FunctionConfig is the sources function's configuration.
type FunctionConfig struct {
	// Table and Key are inboundapi.EnvTable and EnvKey (both
	// required): the table, and the KMS key source secrets are sealed
	// under (purpose webhook-source).
	Table, Key string
	// Queue and DLQ are the inbound queue's URL and its dead-letter
	// queue's (inboundapi.EnvQueue, EnvDLQ): both or neither; neither:
	// dlq list and redrive are refused.
	Queue, DLQ string
	// SchedulerGroup, SchedulerRole, QueueARN and DLQARN are
	// inboundapi.EnvSchedulerGroup, EnvSchedulerRole, EnvQueueARN and
	// EnvDLQARN: all or none. None (the local stack): schedules are items
	// only, which a ticker fires.
	SchedulerGroup, SchedulerRole, QueueARN, DLQARN string
	Callers                                         caller.Config
	// Operators are inboundapi.EnvOperators's patterns
	// (reviewer.ParseAdmins): principals of the function's own account.
	Operators []string
}

// Shapes of the EventBridge Scheduler settings (EventBridge Scheduler API
// Reference: a group name is 1 to 64 of [0-9a-zA-Z-_.], a target's RoleArn
// an IAM role ARN, its Arn and a dead-letter queue's an ARN; here SQS
// queues').
var (
	schedulerGroupShape = regexp.MustCompile(`^[0-9a-zA-Z._-]{1,64}$`)
	roleARNShape        = regexp.MustCompile(`^arn:aws(-[a-z]+)*:iam::\d{12}:role/[\w+=,.@/-]+$`)
	queueARNShape       = regexp.MustCompile(`^arn:aws(-[a-z]+)*:sqs:[a-z0-9-]+:\d{12}:[\w-]{1,80}$`)
)

// FunctionConfigFromEnv reads and checks the sources function's
// configuration; an error names the variable and the rule.
func FunctionConfigFromEnv(getenv func(string) string) (FunctionConfig, error) {
	c := FunctionConfig{Table: getenv(inboundapi.EnvTable), Key: getenv(inboundapi.EnvKey), Queue: getenv(inboundapi.EnvQueue), DLQ: getenv(inboundapi.EnvDLQ),
		SchedulerGroup: getenv(inboundapi.EnvSchedulerGroup), SchedulerRole: getenv(inboundapi.EnvSchedulerRole),
		QueueARN: getenv(inboundapi.EnvQueueARN), DLQARN: getenv(inboundapi.EnvDLQARN)}
	for _, v := range []struct{ name, value string }{{inboundapi.EnvTable, c.Table}, {inboundapi.EnvKey, c.Key}} {
		if v.value == "" {
			return c, fmt.Errorf("%s is not set", v.name)
		}
	}
	if (c.Queue == "") != (c.DLQ == "") {
		return c, fmt.Errorf("%s and %s: set both or neither", inboundapi.EnvQueue, inboundapi.EnvDLQ)
	}
	if c.SchedulerGroup != "" || c.SchedulerRole != "" || c.QueueARN != "" || c.DLQARN != "" {
		for _, v := range []struct {
			name, value string
			shape       *regexp.Regexp
			what        string
		}{
			{inboundapi.EnvSchedulerGroup, c.SchedulerGroup, schedulerGroupShape, "a schedule group name, 1 to 64 of [0-9a-zA-Z-_.]"},
			{inboundapi.EnvSchedulerRole, c.SchedulerRole, roleARNShape, "an IAM role ARN"},
			{inboundapi.EnvQueueARN, c.QueueARN, queueARNShape, "an SQS queue ARN"},
			{inboundapi.EnvDLQARN, c.DLQARN, queueARNShape, "an SQS queue ARN"},
		} {
			if !v.shape.MatchString(v.value) {
				return c, fmt.Errorf("%s must be %s (EventBridge Scheduler's settings are all set, or none)", v.name, v.what)
			}
		}
	}
	var err error
	if c.Callers, err = caller.ConfigFromEnv(getenv); err != nil {
		return c, err
	}
	c.Operators, err = reviewer.ParseAdmins(inboundapi.EnvOperators, getenv(inboundapi.EnvOperators), c.Callers.Account)
	return c, err
}
