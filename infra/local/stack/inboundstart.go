package stack

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolgate/toolgate/infra/local"
	"github.com/toolgate/toolgate/infra/local/sqs"
	"github.com/toolgate/toolgate/shared/caller"
	"github.com/toolgate/toolgate/shared/functionconfig"
	"github.com/toolgate/toolgate/shared/inbound/store"
	"github.com/toolgate/toolgate/shared/inboundapi"
	"github.com/toolgate/toolgate/shared/schedule"
)

// The inbound-start function's identities on the local stack
// (docs/identity.md, "Four eyes"): it runs with the keys of the local
// identity InboundStartIdentity as its AWS credentials, the STS stand-in
// lets that identity (and no other) assume InboundRoleName, and every
// function counts that role's session names (TOOLGATE_SESSION_ROLES), so
// a run a source starts is started by
// arn:aws:sts::000000000000:assumed-role/toolgate-local-inbound-start/src-<source>.
const (
	InboundStartIdentity = "inbound-start"
	InboundRoleName      = "toolgate-" + Stage + "-inbound-start"
	// InboundStartFunction is the consumer of the inbound queue.
	InboundStartFunction = "inbound-start"
)

// InboundRoleARN is the inbound-start role's ARN
// (inboundapi.EnvRole of inbound-start and review-request).
func InboundRoleARN() string { return "arn:aws:iam::" + AccountID + ":role/" + InboundRoleName }

// InboundSessionARN is the principal of session (src-<source> or
// sched-<schedule>) of the inbound-start role: what a start record names
// as the starter of the runs that session starts.
func InboundSessionARN(session string) string {
	return "arn:aws:sts::" + AccountID + ":assumed-role/" + InboundRoleName + "/" + session
}

// The local scheduler ticker: every scheduleTick it reads the schedule
// items and sends the firings due; a schedule that fell behind (a long
// pause of this process) sends at most maxFiringsPerTick per tick, oldest
// first, as EventBridge Scheduler never floods its target either.
const (
	scheduleTick      = time.Second
	maxFiringsPerTick = 10
)

// inboundStartEnv is the inbound-start function's own environment: its
// identity's keys as AWS credentials (the STS stand-in verifies its
// AssumeRole by them), the STS, Step Functions and SSM endpoints, the
// inbound-start role, review-request's start instance (which starts before
// it: StartStack starts inbound-start last) and the stage's external key.
func (s *Stack) inboundStartEnv() map[string]string {
	env := map[string]string{"TOOLGATE_STAGE": Stage, "AWS_ENDPOINT_URL_SFN": s.SFN.Endpoint(), "AWS_ENDPOINT_URL_STS": s.STS.Endpoint(),
		"AWS_ENDPOINT_URL_SSM": s.SSM.Endpoint(), inboundapi.EnvExternalKeyParam: functionconfig.ExternalKeyParam(Stage),
		inboundapi.EnvRole: InboundRoleARN(), inboundapi.EnvRunStartFunction: s.StartEndpoint}
	if creds, err := s.Keys.Credentials(InboundStartIdentity); err == nil {
		env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = creds.AccessKeyID, creds.SecretAccessKey
	}
	return env
}

// sessionRolesEnv is TOOLGATE_SESSION_ROLES of every function: the role
// whose session names identify who started a run.
func sessionRolesEnv() (string, string) { return caller.EnvSessionRoles, InboundRoleName }

// inboundStart is the local stack's inbound consumer: the poller of the
// inbound queue and the scheduler ticker.
type inboundStart struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
	// fired is the latest scheduled time sent per schedule (by name and
	// added_at: a schedule removed and added again starts afresh).
	mu    sync.Mutex
	fired map[string]time.Time
	// since is when the ticker started: no firing before it is sent.
	since time.Time
}

// startInboundStart trusts InboundStartIdentity with InboundRoleName on
// the STS stand-in, and starts the poller of the inbound queue, invoking
// inbound-start at invokeURL with its batches as its event-source mapping
// does on AWS, and the scheduler ticker. stopInboundStart ends them. An
// error is the trust's (a bad name).
func (s *Stack) startInboundStart(invokeURL string, logf func(string, ...any)) error {
	if err := s.STS.Trust(InboundRoleName, InboundStartIdentity); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &inboundStart{stop: cancel, fired: map[string]time.Time{}, since: time.Now().UTC().Truncate(time.Second)}
	s.consumer = in
	p := &sqs.Poller{Client: s.SQS.Client(), Queue: s.InboundQueues.Queue, Invoke: sqs.InvokeURL(invokeURL)}
	in.wg.Add(2)
	go func() {
		defer in.wg.Done()
		if err := p.Run(ctx); err != nil {
			logf("poller of %s stopped: %v", s.InboundQueues.Queue.Name, err)
		}
	}()
	logf("poller       %s -> %s", s.InboundQueues.Queue.Name, InboundStartFunction)
	st := store.New(local.DynamoDB(s.Dynamo.Endpoint()), Table)
	go func() {
		defer in.wg.Done()
		tick := time.NewTicker(scheduleTick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if err := s.fireDue(ctx, st, now.UTC()); err != nil && ctx.Err() == nil {
					logf("scheduler ticker: %v", err)
				}
			}
		}
	}()
	logf("scheduler    every %v, schedule firings -> %s", scheduleTick, s.InboundQueues.Queue.Name)
	return nil
}

// stopInboundStart ends the poller and the ticker, and waits for them.
func (s *Stack) stopInboundStart() {
	if s.consumer == nil {
		return
	}
	s.consumer.stop()
	s.consumer.wg.Wait()
	s.consumer = nil
}

// fireDue sends, for each ENABLED schedule, every firing due at now that
// was not sent yet: the times its expression (schedule.ParseLocal) gives
// after the later of the ticker's start and the schedule's added_at, and
// after the last one sent. A paused schedule sends none, and resumes
// from the time it is resumed, as EventBridge Scheduler does.
func (s *Stack) fireDue(ctx context.Context, st *store.Store, now time.Time) error {
	schedules, err := st.Schedules(ctx)
	if err != nil {
		return fmt.Errorf("read the schedules: %w", err)
	}
	in := s.consumer
	for _, sch := range schedules {
		id := sch.Name + "\x00" + sch.AddedAt.UTC().Format(time.RFC3339Nano)
		in.mu.Lock()
		last, ok := in.fired[id]
		if !ok {
			last = in.since
			if sch.AddedAt.After(last) {
				last = sch.AddedAt.UTC()
			}
		}
		if sch.State != inboundapi.StateEnabled {
			in.fired[id] = now
			in.mu.Unlock()
			continue
		}
		in.mu.Unlock()
		expr, err := schedule.ParseLocal(sch.Expression)
		if err != nil {
			return fmt.Errorf("schedule %s: %w", sch.Name, err)
		}
		for _, next := range dueFirings(expr, last, now, maxFiringsPerTick) {
			if err := s.FireSchedule(ctx, sch.Name, next); err != nil {
				return err
			}
			in.mu.Lock()
			in.fired[id] = next
			in.mu.Unlock()
		}
	}
	return nil
}

// dueFirings are expr's firings strictly after last and at most now,
// oldest first, at most max of them.
func dueFirings(expr schedule.Expr, last, now time.Time, max int) []time.Time {
	var out []time.Time
	for len(out) < max {
		next := expr.Next(last)
		if next.IsZero() || next.After(now) {
			break
		}
		out = append(out, next)
		last = next
	}
	return out
}

// FireSchedule sends schedule's firing at scheduled to the inbound queue,
// {"schedule": NAME, "scheduled_time": RFC 3339 UTC}, as EventBridge
// Scheduler's target input does on AWS: the ticker's own, or a test's
// (re)delivered firing.
func (s *Stack) FireSchedule(ctx context.Context, name string, scheduled time.Time) error {
	body := inboundapi.FiringMessage(name, scheduled).Encode()
	_, err := s.SQS.Client().SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(s.InboundQueues.Queue.URL), MessageBody: aws.String(string(body))})
	if err != nil {
		return fmt.Errorf("send the firing of %s at %s: %w", name, scheduled.UTC().Format(time.RFC3339), err)
	}
	return nil
}
