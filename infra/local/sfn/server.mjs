#!/usr/bin/env node
// A local AWS Step Functions endpoint for toolgate's tests and local stack.
//
//   node infra/local/sfn/server.mjs --port P [--functions FILE] [--faults FILE] [--lambda-cause message|payload] [--events-queue URL]
//
// It speaks the AWS JSON 1.0 protocol (POST /, X-Amz-Target:
// AWSStepFunctions.<Action>) for CreateStateMachine, UpdateStateMachine,
// PublishStateMachineVersion, DescribeStateMachine, ListStateMachines,
// StartExecution, StopExecution, DescribeExecution,
// DescribeStateMachineForExecution, ListExecutions, GetExecutionHistory,
// SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat, listens on
// 127.0.0.1 only and keeps everything in memory. Definitions run on
// aws-local-stepfunctions 3.0.0.
//
// Task resources:
//   - Lambda (arn:aws:states:::lambda:invoke[.waitForTaskToken] with
//     Parameters {FunctionName, Payload}, or a bare Lambda function ARN) calls
//     functions running under the Lambda Runtime Interface Emulator, found by
//     function name in FILE: {"<function name>": "http://127.0.0.1:P/2015-03-31/functions/function/invocations"}.
//     FILE is read again on every invocation, so functions can be added later.
//   - arn:aws:states:::states:startExecution[.sync|.sync:2] starts a child
//     execution through StartExecution's own code path and, with .sync, waits
//     until it closes.
//   - arn:aws:states:::aws-sdk:sfn:describeExecution answers as
//     DescribeExecution does, in the AWS SDK integration's shape.
//
// What the server adds to the library (see README.md beside this file):
// $$.Execution.Id/Name, the execution's own $$.Execution.Input/StartTime in
// every scope, $$.StateMachine, $$.State.Name/EnteredTime/RetryCount and a
// fresh $$.Task.Token per attempt of a .waitForTaskToken Task, which only
// that attempt's timeout closes; the Lambda result wrapped as
// {ExecutedVersion, Payload, StatusCode}; RIE answers turned into States
// errors; callbacks with SendTask*; one invocation at a time per RIE (a
// second concurrent one crashes the RIE); Task and execution timeouts clamped
// to what Node timers can wait, and longer Waits waited in steps and logged
// (timers.mjs); a correct States.Hash (library-fixes.mjs). --faults FILE is a
// test hook (see takeSyncFault). --events-queue URL sends each execution
// status change (RUNNING at the start, then how it closed) to that queue of
// the local SQS stand-in, in the shape the platform's EventBridge rule gives
// the webhook events queue on AWS (statusChanged).

import http from 'node:http';
import fs from 'node:fs';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { register } from 'node:module';
import { MAX_TIMER_MS, onLongSleep } from './timers.mjs';

// aws-local-stepfunctions targets Node 22; Node 20 lacks Promise.withResolvers.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}
register('./library-fixes.mjs', import.meta.url);
const { StateMachine, ExecutionTimeoutError, ExecutionAbortedError } = await import('aws-local-stepfunctions');

// States.Hash must agree with node:crypto (library-fixes.mjs corrects the
// library's); a message of several blocks, not ASCII, for every algorithm.
{
  const message = `arn:aws:states:${'é✓😀'.repeat(20)}`;
  const algorithms = { MD5: 'md5', 'SHA-1': 'sha1', 'SHA-256': 'sha256', 'SHA-384': 'sha384', 'SHA-512': 'sha512' };
  const parameters = Object.fromEntries(Object.keys(algorithms).map((a) => [`${a}.$`, `States.Hash($.m, '${a}')`]));
  const sm = new StateMachine({ StartAt: 'h', States: { h: { Type: 'Pass', Parameters: parameters, End: true } } });
  const got = await sm.run({ m: message }).result;
  for (const [a, node] of Object.entries(algorithms)) {
    if (got[a] !== createHash(node).update(message, 'utf8').digest('hex')) {
      console.error(`sfn-local: States.Hash ${a} disagrees with node:crypto: the library fix (library-fixes.mjs) did not apply`);
      process.exit(1);
    }
  }
}

const REGION = 'us-east-1';
const ACCOUNT = '000000000000';
const SM_PREFIX = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:`;
const EXEC_PREFIX = `arn:aws:states:${REGION}:${ACCOUNT}:execution:`;
const LAMBDA_PREFIX = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:`;
// setTimeout fires at once (after a warning) for delays above 2^31-1 ms.
const MAX_TIMER_SECONDS = Math.floor(MAX_TIMER_MS / 1000); // 2147483 s, about 24.8 days
const TOKEN_RE = /^AQA[A-Za-z0-9_-]{86}$/;
// Names of state machines and executions (StartExecution's name, per the API
// reference): 1-80 characters, none of them white space, < > { } [ ] ? * " #
// % \ ^ | ~ ` $ & , ; : /, a control character (U+0000-001F, U+007F-009F),
// U+FFFE-FFFF, a lone surrogate or U+10FFFF.
const NAME_RE = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f\ufffe\uffff\ud800-\udfff\u{10ffff}]{1,80}$/u;

// ---------------------------------------------------------------- command line

function usage(msg) {
  if (msg) console.error(`sfn-local: ${msg}`);
  console.error('usage: node server.mjs --port P [--functions FILE] [--faults FILE] [--lambda-cause message|payload] [--events-queue URL]');
  process.exit(2);
}

const opts = { port: undefined, functions: '', faults: '', lambdaCause: 'message', eventsQueue: '' };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s, 2);
    const take = () => {
      if (value !== undefined) return value;
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case '--port':
        opts.port = Number(take());
        break;
      case '--functions':
        opts.functions = take();
        break;
      case '--faults':
        opts.faults = take();
        break;
      case '--lambda-cause':
        opts.lambdaCause = take();
        break;
      case '--events-queue':
        opts.eventsQueue = take();
        break;
      case '-h':
      case '--help':
        usage();
        break;
      default:
        usage(`unknown argument ${argv[i]}`);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) usage('--port must be a port number');
  if (!['message', 'payload'].includes(opts.lambdaCause)) usage('--lambda-cause must be message or payload');
  if (opts.eventsQueue && !/^http:\/\/127\.0\.0\.1:\d+\//.test(opts.eventsQueue)) usage('--events-queue must be a queue URL on 127.0.0.1');
}

let statusChanges = Promise.resolve();

/**
 * Sends exec's status change to --events-queue (SQS SendMessage, AWS JSON
 * 1.0), in order: what the platform's EventBridge rule on "Step Functions
 * Execution Status Change" events puts on the webhook events queue through
 * its input transformer, which passes these six fields only (dates in epoch
 * milliseconds, stop_date null while running), never the input, output or
 * cause. A failed send is logged, never the execution's.
 */
function statusChanged(exec) {
  if (!opts.eventsQueue) return;
  const body = JSON.stringify({
    source: 'aws.states',
    execution_arn: exec.arn,
    state_machine_arn: exec.machine.arn,
    name: exec.name,
    status: exec.status,
    start_date: Math.round(exec.startDate * 1000),
    stop_date: exec.stopDate === undefined ? null : Math.round(exec.stopDate * 1000),
  });
  statusChanges = statusChanges.then(async () => {
    try {
      const res = await fetch(new URL(opts.eventsQueue).origin + '/', {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-amz-json-1.0', 'X-Amz-Target': 'AmazonSQS.SendMessage' },
        body: JSON.stringify({ QueueUrl: opts.eventsQueue, MessageBody: body }),
      });
      if (!res.ok) log(`status change of ${exec.arn}: SendMessage answered ${res.status}`);
      await res.arrayBuffer();
    } catch (err) {
      log(`status change of ${exec.arn}: ${err?.message ?? err}`);
    }
  });
}

function log(msg) {
  console.log(`sfn-local: ${msg}`);
}

process.on('unhandledRejection', (err) => {
  console.error('sfn-local: unhandled rejection:', err);
});

// ---------------------------------------------------------------- API errors

class ApiError extends Error {
  constructor(type, message, status = 400) {
    super(message);
    this.type = type;
    this.status = status;
  }
}
const apiError = (type, message) => new ApiError(type, message);

function requireString(input, key) {
  const v = input[key];
  if (v === undefined || v === null || v === '') {
    throw apiError('ValidationException', `1 validation error detected: Value null at '${key}' failed to satisfy constraint: Member must not be null`);
  }
  if (typeof v !== 'string') throw apiError('SerializationException', `${key} must be a string`);
  return v;
}

function optString(input, key) {
  const v = input[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw apiError('SerializationException', `${key} must be a string`);
  return v;
}

function checkName(name, what) {
  if (!NAME_RE.test(name)) throw apiError('InvalidName', `Invalid Name: '${name}' (${what} names are 1-80 characters without whitespace, brackets, wildcards or special characters)`);
}

const now = () => Date.now() / 1000; // AWS JSON timestamps: epoch seconds

// ---------------------------------------------------------------- state machines

/** name -> {name, arn, type, roleArn, definition, def, creationDate, updateDate, revisionId, versions[], logging, tracing} */
const machines = new Map();

function parseDefinition(text) {
  let def;
  try {
    def = JSON.parse(text);
  } catch (err) {
    throw apiError('InvalidDefinition', `Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: ${err.message}'`);
  }
  if (def === null || typeof def !== 'object' || Array.isArray(def)) {
    throw apiError('InvalidDefinition', "Invalid State Machine Definition: 'SCHEMA_VALIDATION_FAILED: the definition is not a JSON object'");
  }
  // The library silently ignores these; refuse them rather than run them wrongly.
  const unsupported = [];
  walkStates(def, (name, state, scope) => {
    if (state.QueryLanguage === 'JSONata') unsupported.push(`state ${name}: JSONata`);
    for (const k of ['Assign', 'Arguments', 'Output', 'Items', 'ItemReader', 'ItemBatcher', 'ResultWriter']) {
      if (k in state) unsupported.push(`state ${name}: ${k}`);
    }
    if (state.Type === 'Map' && state.ItemProcessor?.ProcessorConfig?.Mode === 'DISTRIBUTED') unsupported.push(`state ${name}: Distributed Map`);
    if (scope.QueryLanguage === 'JSONata') unsupported.push('JSONata');
  });
  if (def.QueryLanguage === 'JSONata') unsupported.push('QueryLanguage JSONata');
  if (unsupported.length) {
    throw apiError('InvalidDefinition', `Invalid State Machine Definition: not supported by the local endpoint (aws-local-stepfunctions 3.0.0): ${[...new Set(unsupported)].join(', ')}`);
  }
  try {
    new StateMachine(def); // validates with asl-validator
  } catch (err) {
    throw apiError('InvalidDefinition', `Invalid State Machine Definition: '${String(err.message).replace(/\s+/g, ' ').trim()}'`);
  }
  return def;
}

/** Calls fn(name, state, scope) for every state, nested ones included. */
function walkStates(scope, fn) {
  if (!scope || typeof scope.States !== 'object' || scope.States === null) return;
  for (const [name, state] of Object.entries(scope.States)) {
    if (!state || typeof state !== 'object') continue;
    fn(name, state, scope);
    if (state.Type === 'Parallel' && Array.isArray(state.Branches)) state.Branches.forEach((b) => walkStates(b, fn));
    if (state.Type === 'Map') walkStates(state.ItemProcessor ?? state.Iterator, fn);
  }
}

/** Logs one line per timeout that Node timers cannot wait for. */
function logClamps(smName, def) {
  if (typeof def.TimeoutSeconds === 'number' && def.TimeoutSeconds > MAX_TIMER_SECONDS) {
    log(`state machine ${smName}: TimeoutSeconds ${def.TimeoutSeconds} is longer than Node timers can wait; clamped to ${MAX_TIMER_SECONDS} s (about 24.8 days)`);
  }
  walkStates(def, (name, state) => {
    if (state.Type === 'Task' && typeof state.TimeoutSeconds === 'number' && state.TimeoutSeconds > MAX_TIMER_SECONDS) {
      log(`state machine ${smName}: state ${name}: TimeoutSeconds ${state.TimeoutSeconds} is longer than Node timers can wait; clamped to ${MAX_TIMER_SECONDS} s (about 24.8 days)`);
    }
  });
}

/** Resolves a state machine or version ARN: {machine, version|null}. */
function findMachine(arn, { versions = true } = {}) {
  if (typeof arn !== 'string' || !arn.startsWith('arn:')) throw apiError('InvalidArn', `Invalid Arn: '${arn}'`);
  const m = /^arn:aws:states:([^:]+):(\d{12}):stateMachine:([^:]+)(?::([^:]+))?$/.exec(arn);
  if (!m) throw apiError('InvalidArn', `Invalid Arn: 'Resource type not valid in this context: ${arn}'`);
  const [, region, account, name, qualifier] = m;
  const machine = region === REGION && account === ACCOUNT ? machines.get(name) : undefined;
  if (!machine) throw apiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);
  if (qualifier === undefined) return { machine, version: null };
  if (!versions) throw apiError('InvalidArn', `Invalid Arn: 'a state machine version or alias ARN is not valid here: ${arn}'`);
  if (!/^[1-9]\d*$/.test(qualifier)) throw apiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}' (aliases are not supported locally)`);
  const version = machine.versions[Number(qualifier) - 1];
  if (!version) throw apiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${arn}'`);
  return { machine, version };
}

function publishVersion(machine, description) {
  const existing = machine.versions.find((v) => v.revisionId === machine.revisionId);
  if (existing) return existing;
  const n = machine.versions.length + 1;
  const version = {
    n,
    arn: `${machine.arn}:${n}`,
    definition: machine.definition,
    def: machine.def,
    roleArn: machine.roleArn,
    revisionId: machine.revisionId,
    // The revision's: when the machine was last updated before publishing
    // (its creation for a first revision), as DescribeStateMachineForExecution
    // answers for an execution of the version.
    updateDate: machine.updateDate ?? machine.creationDate,
    description: description ?? undefined,
    creationDate: now(),
  };
  machine.versions.push(version);
  log(`published ${version.arn}`);
  return version;
}

const api = {};

api.CreateStateMachine = (input) => {
  const name = requireString(input, 'name');
  const definition = requireString(input, 'definition');
  const roleArn = requireString(input, 'roleArn');
  const type = optString(input, 'type') ?? 'STANDARD';
  checkName(name, 'state machine');
  if (!['STANDARD', 'EXPRESS'].includes(type)) throw apiError('ValidationException', `type must be STANDARD or EXPRESS, not ${type}`);
  if (!roleArn.startsWith('arn:')) throw apiError('InvalidArn', `Invalid Arn: '${roleArn}'`);
  const def = parseDefinition(definition);
  const old = machines.get(name);
  if (old) {
    if (old.definition === definition && old.roleArn === roleArn && old.type === type) {
      const out = { stateMachineArn: old.arn, creationDate: old.creationDate };
      if (input.publish) out.stateMachineVersionArn = publishVersion(old, optString(input, 'versionDescription')).arn;
      return out;
    }
    throw apiError('StateMachineAlreadyExists', `State Machine Already Exists: '${old.arn}'`);
  }
  const machine = {
    name,
    arn: SM_PREFIX + name,
    type,
    roleArn,
    definition,
    def,
    creationDate: now(),
    updateDate: undefined,
    revisionId: null, // "INITIAL": no revision id until the first update
    versions: [],
    loggingConfiguration: input.loggingConfiguration ?? { level: 'OFF', includeExecutionData: false },
    tracingConfiguration: input.tracingConfiguration ?? { enabled: false },
  };
  machines.set(name, machine);
  logClamps(name, def);
  log(`created ${machine.arn}`);
  const out = { stateMachineArn: machine.arn, creationDate: machine.creationDate };
  if (input.publish) out.stateMachineVersionArn = publishVersion(machine, optString(input, 'versionDescription')).arn;
  return out;
};

api.UpdateStateMachine = (input) => {
  const { machine } = findMachine(requireString(input, 'stateMachineArn'), { versions: false });
  const definition = optString(input, 'definition');
  const roleArn = optString(input, 'roleArn');
  if (definition === undefined && roleArn === undefined && !input.loggingConfiguration && !input.tracingConfiguration) {
    throw apiError('MissingRequiredParameter', 'Either the definition, the roleArn, the loggingConfiguration or the tracingConfiguration must be specified');
  }
  if (roleArn !== undefined && !roleArn.startsWith('arn:')) throw apiError('InvalidArn', `Invalid Arn: '${roleArn}'`);
  const def = definition !== undefined ? parseDefinition(definition) : undefined;
  const changed = (definition !== undefined && definition !== machine.definition) || (roleArn !== undefined && roleArn !== machine.roleArn);
  if (def) {
    machine.definition = definition;
    machine.def = def;
    logClamps(machine.name, def);
  }
  if (roleArn !== undefined) machine.roleArn = roleArn;
  if (input.loggingConfiguration) machine.loggingConfiguration = input.loggingConfiguration;
  if (input.tracingConfiguration) machine.tracingConfiguration = input.tracingConfiguration;
  machine.updateDate = now();
  if (changed || machine.revisionId === null) machine.revisionId = randomUUID();
  const out = { updateDate: machine.updateDate, revisionId: machine.revisionId };
  if (input.publish) out.stateMachineVersionArn = publishVersion(machine, optString(input, 'versionDescription')).arn;
  return out;
};

api.PublishStateMachineVersion = (input) => {
  const { machine } = findMachine(requireString(input, 'stateMachineArn'), { versions: false });
  const revisionId = optString(input, 'revisionId');
  const description = optString(input, 'description');
  if (description !== undefined && description.length > 256) throw apiError('ValidationException', 'description is longer than 256 characters');
  if (revisionId !== undefined) {
    const current = machine.revisionId ?? 'INITIAL';
    if (revisionId !== current) throw apiError('ConflictException', `Failed to publish the State Machine version for revision ${revisionId}. The current State Machine revision is ${current}.`);
  }
  const version = publishVersion(machine, description);
  return { creationDate: version.creationDate, stateMachineVersionArn: version.arn };
};

api.DescribeStateMachine = (input) => {
  const { machine, version } = findMachine(requireString(input, 'stateMachineArn'));
  const src = version ?? machine;
  const out = {
    stateMachineArn: src.arn,
    name: machine.name,
    status: 'ACTIVE',
    definition: src.definition,
    roleArn: src.roleArn,
    type: machine.type,
    creationDate: src.creationDate,
    loggingConfiguration: machine.loggingConfiguration,
    tracingConfiguration: machine.tracingConfiguration,
  };
  if (src.revisionId) out.revisionId = src.revisionId;
  if (version?.description !== undefined) out.description = version.description;
  return out;
};

function pageOf(items, input, what) {
  let start = 0;
  const token = optString(input, 'nextToken');
  if (token !== undefined) {
    let t;
    try {
      t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    } catch {
      t = null;
    }
    if (!t || t.w !== what || !Number.isInteger(t.o) || t.o < 0) throw apiError('InvalidToken', `Invalid Token: '${token}'`);
    start = t.o;
  }
  let max = input.maxResults ?? 0;
  if (!Number.isInteger(max) || max < 0 || max > 1000) throw apiError('ValidationException', 'maxResults must be between 0 and 1000');
  if (max === 0) max = 100;
  const page = items.slice(start, start + max);
  const next = start + max < items.length ? Buffer.from(JSON.stringify({ w: what, o: start + max })).toString('base64url') : undefined;
  return { page, next };
}

api.ListStateMachines = (input) => {
  const all = [...machines.values()];
  const { page, next } = pageOf(all, input, 'machines');
  const out = { stateMachines: page.map((m) => ({ stateMachineArn: m.arn, name: m.name, type: m.type, creationDate: m.creationDate })) };
  if (next) out.nextToken = next;
  return out;
};

// ---------------------------------------------------------------- executions

/** arn -> execution */
const executions = new Map();
/** token -> {token, exec, stateName, status: 'pending'|'waiting'|'closed', settle: {resolve, reject}|null, early: outcome|null} */
const tokens = new Map();

/**
 * StartExecution's one code path, for the API and for startExecution Tasks:
 * {stateMachineArn, name?, input?} (the API's members) → the execution, new
 * or, as on AWS (Standard), the running one with the same name, input and
 * target. Throws ApiError.
 */
function startExecution(input) {
  const target = requireString(input, 'stateMachineArn');
  const { machine, version } = findMachine(target);
  const name = optString(input, 'name') ?? randomUUID();
  checkName(name, 'execution');
  const inputText = optString(input, 'input') ?? '{}';
  let value;
  try {
    value = JSON.parse(inputText);
  } catch (err) {
    throw apiError('InvalidExecutionInput', `Invalid State Machine Execution Input: '${err.message}'`);
  }
  const arn = `${EXEC_PREFIX}${machine.name}:${name}`;
  const old = executions.get(arn);
  if (old) {
    if (old.status === 'RUNNING' && old.input === inputText && old.startedWith === target) return old;
    throw apiError('ExecutionAlreadyExists', `Execution Already Exists: '${arn}'`);
  }
  const startMs = Date.now();
  const src = version ?? machine;
  const exec = {
    arn,
    name,
    machine,
    version,
    // The revision the execution runs, fixed at its start: the version's,
    // or the machine's latest; an update after the start changes neither
    // what runs nor what DescribeStateMachineForExecution answers.
    revision: {
      definition: src.definition,
      def: src.def,
      roleArn: src.roleArn,
      revisionId: src.revisionId,
      updateDate: version ? version.updateDate : machine.updateDate ?? machine.creationDate,
    },
    startedWith: target,
    input: inputText,
    status: 'RUNNING',
    startDate: startMs / 1000, // epoch seconds, with the milliseconds of startTime
    startTime: new Date(startMs).toISOString(), // $$.Execution.StartTime: the same instant
    stopDate: undefined,
    output: undefined,
    error: undefined,
    cause: undefined,
    events: [],
    closed: false,
    pending: null,
    lastState: null,
    tokens: new Set(),
    closing: Promise.withResolvers(), // resolved by finish()
    ended: new AbortController(), // aborted by finish(): stops what runs on the execution's behalf
    stopRun: null, // aborts the library's run (set by run())
  };
  executions.set(arn, exec);
  statusChanged(exec);
  run(exec, value);
  return exec;
}

api.StartExecution = (input) => {
  const exec = startExecution(input);
  return { executionArn: exec.arn, startDate: exec.startDate };
};

/** The DescribeExecution answer for exec (API member names, epoch-second dates). */
function describe(exec) {
  const out = {
    executionArn: exec.arn,
    stateMachineArn: exec.machine.arn,
    name: exec.name,
    status: exec.status,
    startDate: exec.startDate,
    input: exec.input,
    inputDetails: { included: true },
    redriveCount: 0,
    redriveStatus: 'NOT_REDRIVABLE',
    redriveStatusReason: 'Redrive is not supported by the local endpoint',
  };
  if (exec.version) out.stateMachineVersionArn = exec.version.arn;
  if (exec.stopDate !== undefined) out.stopDate = exec.stopDate;
  if (exec.output !== undefined) {
    out.output = exec.output;
    out.outputDetails = { included: true };
  }
  if (exec.error !== undefined) out.error = exec.error;
  if (exec.cause !== undefined) out.cause = exec.cause;
  return out;
}

api.DescribeExecution = (input) => describe(findExecution(requireString(input, 'executionArn')));

// The state machine of the execution, with the definition, role and
// revision it runs (remembered at its start): the unqualified state machine
// ARN even for an execution started on a version, as on AWS. No Map Run
// dispatches executions locally, so no mapRunArn or label; the logging and
// tracing configurations are not remembered per revision, so not answered.
api.DescribeStateMachineForExecution = (input) => {
  const exec = findExecution(requireString(input, 'executionArn'));
  const out = {
    stateMachineArn: exec.machine.arn,
    name: exec.machine.name,
    definition: exec.revision.definition,
    roleArn: exec.revision.roleArn,
    updateDate: exec.revision.updateDate,
  };
  if (exec.revision.revisionId) out.revisionId = exec.revision.revisionId;
  return out;
};

// StopExecution (AWS Step Functions API reference, "StopExecution"): a
// running execution ends ABORTED with the error and cause given (each
// optional; error at most 256 characters, cause at most 32768), its pending
// task tokens closed (SendTask* on them answers TaskTimedOut, as for any
// ended execution), an ExecutionAborted history event and, with
// --events-queue, its status change. An execution already closed is left
// as it is and answers the date it stopped.
api.StopExecution = (input) => {
  const exec = findExecution(requireString(input, 'executionArn'));
  const error = optString(input, 'error');
  const cause = optString(input, 'cause');
  if (error !== undefined && error.length > 256) throw apiError('ValidationException', "1 validation error detected: Value at 'error' failed to satisfy constraint: Member must have length less than or equal to 256");
  if (cause !== undefined && cause.length > 32768) throw apiError('ValidationException', "1 validation error detected: Value at 'cause' failed to satisfy constraint: Member must have length less than or equal to 32768");
  stopExecution(exec, { error, cause });
  return { stopDate: exec.stopDate };
};

const EXECUTION_STATUSES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED', 'PENDING_REDRIVE'];

// Newest first, as on AWS. A state machine ARN lists every execution of the
// machine, those started through a version included; a version ARN lists
// those started through that version.
api.ListExecutions = (input) => {
  if (input.mapRunArn != null) throw apiError('ValidationException', 'mapRunArn is not supported by the local endpoint (no Distributed Map)');
  const target = requireString(input, 'stateMachineArn');
  const { machine, version } = findMachine(target);
  const status = optString(input, 'statusFilter');
  if (status !== undefined && !EXECUTION_STATUSES.includes(status)) {
    throw apiError('ValidationException', `1 validation error detected: Value '${status}' at 'statusFilter' failed to satisfy constraint: Member must satisfy enum value set: [${EXECUTION_STATUSES.join(', ')}]`);
  }
  const redriveFilter = optString(input, 'redriveFilter');
  const matching = [...executions.values()]
    .filter((e) => e.machine === machine && (!version || e.version === version) && (!status || e.status === status) && redriveFilter !== 'REDRIVEN')
    .reverse();
  const { page, next } = pageOf(matching, input, `executions:${target}:${status ?? ''}:${redriveFilter ?? ''}`);
  const out = {
    executions: page.map((e) => {
      const item = { executionArn: e.arn, stateMachineArn: machine.arn, name: e.name, status: e.status, startDate: e.startDate, redriveCount: 0 };
      if (e.stopDate !== undefined) item.stopDate = e.stopDate;
      if (e.version) item.stateMachineVersionArn = e.version.arn;
      return item;
    }),
  };
  if (next) out.nextToken = next;
  return out;
};

api.GetExecutionHistory = (input) => {
  const exec = findExecution(requireString(input, 'executionArn'));
  let events = exec.events;
  if (input.reverseOrder) events = [...events].reverse();
  const { page, next } = pageOf(events, input, `history:${exec.arn}:${input.reverseOrder ? 'r' : 'f'}`);
  const withData = input.includeExecutionData !== false;
  const out = { events: withData ? page : page.map(stripData) };
  if (next) out.nextToken = next;
  return out;
};

function stripData(ev) {
  const out = { ...ev };
  for (const [k, v] of Object.entries(ev)) {
    if (k.endsWith('EventDetails') && v && typeof v === 'object') {
      const d = { ...v };
      for (const f of ['input', 'output', 'parameters']) delete d[f];
      out[k] = d;
    }
  }
  return out;
}

function findExecution(arn) {
  if (!arn.startsWith('arn:')) throw apiError('InvalidArn', `Invalid Arn: '${arn}'`);
  if (!/^arn:aws:states:[^:]+:\d{12}:execution:[^:]+:[^:]+$/.test(arn)) throw apiError('InvalidArn', `Invalid Arn: 'Resource type not valid in this context: ${arn}'`);
  const exec = executions.get(arn);
  if (!exec) throw apiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${arn}'`);
  return exec;
}

function record(exec, type, details, timestamp = Date.now()) {
  const id = exec.events.length + 1;
  const ev = { timestamp: timestamp / 1000, type, id, previousEventId: id - 1 };
  if (details) Object.assign(ev, details);
  exec.events.push(ev);
}

const json = (v) => (v === undefined ? undefined : JSON.stringify(v));
const noTrunc = { truncated: false };

function onLibraryEvent(exec, ev) {
  switch (ev.type) {
    case 'ExecutionStarted': {
      const d = { input: json(ev.input), inputDetails: noTrunc, roleArn: exec.revision.roleArn };
      if (exec.version) d.stateMachineVersionArn = exec.version.arn;
      record(exec, 'ExecutionStarted', { executionStartedEventDetails: d }, ev.timestamp);
      break;
    }
    case 'StateEntered':
      record(exec, `${ev.state.type}StateEntered`, { stateEnteredEventDetails: { name: ev.state.name, input: json(ev.state.input), inputDetails: noTrunc } }, ev.timestamp);
      break;
    case 'StateExited':
      record(exec, `${ev.state.type}StateExited`, { stateExitedEventDetails: { name: ev.state.name, output: json(ev.state.output), outputDetails: noTrunc } }, ev.timestamp);
      break;
    case 'MapIterationStarted':
    case 'MapIterationSucceeded':
    case 'MapIterationFailed': {
      const key = ev.type[0].toLowerCase() + ev.type.slice(1) + 'EventDetails';
      record(exec, ev.type, { [key]: { name: ev.parentState.name, index: ev.index } }, ev.timestamp);
      break;
    }
    default:
      // ExecutionSucceeded/Failed/TimedOut/Aborted are recorded from the
      // result (with AWS's error names); retries, catches and Parallel branch
      // events have no AWS history event of their own. A Task that timed out
      // (StateFailed States.Timeout) closed its own task token already, in
      // runTask: the library's event names only the state, which several
      // Map iterations or Parallel branches may be in at once.
      break;
  }
}

/** Deep-copies def for one run: clamps timeouts and hooks every States map. */
function prepare(def, exec, ctx) {
  const copy = structuredClone(def);
  const tasks = new Map(); // Task state name -> its (unhooked) definition
  if (typeof copy.TimeoutSeconds === 'number') copy.TimeoutSeconds = Math.min(copy.TimeoutSeconds, MAX_TIMER_SECONDS);
  const scopes = [copy];
  walkStates(copy, (name, state) => {
    if (state.Type === 'Task') {
      tasks.set(name, state);
      if (typeof state.TimeoutSeconds === 'number') {
        state.TimeoutSeconds = Math.min(state.TimeoutSeconds, MAX_TIMER_SECONDS);
      } else if (state.TimeoutSecondsPath === undefined) {
        // AWS has no Task timeout by default (99999999 s); the library's is 60 s.
        state.TimeoutSeconds = MAX_TIMER_SECONDS;
      }
    }
    if (state.Type === 'Parallel') scopes.push(...state.Branches);
    if (state.Type === 'Map') scopes.push(state.ItemProcessor ?? state.Iterator);
  });
  for (const scope of scopes) scope.States = hookStates(scope.States, exec, ctx);
  return { prepared: copy, tasks };
}

// The library reads States[name] once each time it enters a state, and the
// state's Parameters once per attempt, synchronously right before it
// evaluates them (and, for a Task, right before it calls the Task handler).
// Each entry gets its own view of the state, which counts the attempts: that
// is $$.State.RetryCount, and the moment to mint a fresh task token. Reading
// the fields a sleep follows from notes the state for the sleep's log line.
function hookStates(states, exec, ctx) {
  return new Proxy(states, {
    get(target, key, receiver) {
      const state = Reflect.get(target, key, receiver);
      if (typeof key !== 'string' || !Object.hasOwn(target, key) || !state || typeof state !== 'object') return state;
      const entry = { attempts: 0, enteredTime: new Date().toISOString() };
      exec.lastState = { name: key, state };
      return new Proxy(state, {
        get(s, prop, r) {
          if (prop === 'Parameters' && s.Type !== 'Map') beforeAttempt(exec, ctx, key, s, entry);
          if (SLEEP_FIELDS.has(prop)) noteSleeper(exec, key);
          return Reflect.get(s, prop, r);
        },
      });
    },
  });
}

// The state a sleep of the library is for, for its log line: the library
// reads a Wait state's Seconds, Timestamp, SecondsPath or TimestampPath, or a
// state's Retry before a retry interval, and calls sleep in the same
// synchronous stretch (concurrent Map iterations and Parallel branches take
// turns between stretches). The note is forgotten when the stretch ends.
const SLEEP_FIELDS = new Set(['Seconds', 'Timestamp', 'SecondsPath', 'TimestampPath', 'Retry']);
let sleeper = null; // {exec, name}
function noteSleeper(exec, name) {
  if (sleeper === null) queueMicrotask(() => (sleeper = null));
  sleeper = { exec, name };
}

// A sleep longer than a Node timer (timers.mjs waits it in steps): one line.
onLongSleep((ms) => {
  const where = sleeper ? `${sleeper.exec.arn}: state ${sleeper.name}: ` : '';
  log(`${where}a wait of ${Math.round(ms / 1000)} s is longer than a Node timer can wait (${MAX_TIMER_SECONDS} s, about 24.8 days): it is waited in steps of at most that`);
});

function beforeAttempt(exec, ctx, name, state, entry) {
  entry.attempts++;
  ctx.State.Name = name;
  ctx.State.EnteredTime = entry.enteredTime;
  ctx.State.RetryCount = entry.attempts - 1;
  if (state.Type !== 'Task') return;
  const token = isCallback(state) ? mintToken(exec, name) : undefined;
  ctx.Task.Token = token?.token;
  exec.pending = { name, token };
}

const isCallback = (state) => typeof state.Resource === 'string' && state.Resource.endsWith('.waitForTaskToken');

function mintToken(exec, stateName) {
  const t = { token: 'AQA' + randomBytes(64).toString('base64url'), exec, stateName, status: 'pending', settle: null, early: null, heartbeats: 0 };
  tokens.set(t.token, t);
  exec.tokens.add(t);
  return t;
}

/** Closes every open task token of exec (it has ended). */
function closeTokens(exec, why) {
  for (const t of exec.tokens) closeToken(t, why);
}

function closeToken(t, why) {
  if (t.status === 'closed') return;
  t.status = 'closed';
  t.exec.tokens.delete(t);
  if (t.settle) t.settle.reject(stateError('States.Runtime', `the task token ${why}`, { final: true }));
  t.settle = null;
}

/** An error the library matches by name (Retry/Catch ErrorEquals); message is the Cause. */
function stateError(name, cause, { final = false } = {}) {
  const err = new Error(cause ?? '');
  err.name = name;
  if (final) {
    // The execution is over: neither retry nor catch it.
    Object.defineProperty(err, 'isRetryable', { value: false });
    Object.defineProperty(err, 'isCatchable', { value: false });
  }
  return err;
}

function run(exec, input) {
  const { machine, version } = exec;
  const { def } = exec.revision;
  const ctx = {
    // Input and StartTime are the execution's in every scope: the library's
    // Map iterations and Parallel branches take them from here
    // (library-fixes.mjs), not from their own input and start.
    Execution: { Id: exec.arn, Input: JSON.parse(exec.input), Name: exec.name, RoleArn: exec.revision.roleArn, StartTime: exec.startTime, RedriveCount: 0 },
    StateMachine: { Id: (version ?? machine).arn, Name: machine.name },
    State: { Name: '', EnteredTime: '', RetryCount: 0 },
    Task: {},
  };
  const { prepared, tasks } = prepare(def, exec, ctx);
  const handlers = {};
  for (const [name, state] of tasks) handlers[name] = (taskInput, { timeoutMs }) => runTask(exec, name, state, taskInput, timeoutMs);
  let execution;
  try {
    const sm = new StateMachine(prepared, { validationOptions: { noValidate: true } });
    execution = sm.run(input, { overrides: { taskResourceLocalHandlers: handlers }, context: ctx });
  } catch (err) {
    finish(exec, 'FAILED', { error: 'States.Runtime', cause: String(err?.message ?? err) });
    return;
  }
  exec.stopRun = execution.abort;
  const events = (async () => {
    for await (const ev of execution.eventLogs) onLibraryEvent(exec, ev);
  })();
  execution.result.then(
    async (output) => {
      await events.catch(() => {});
      finish(exec, 'SUCCEEDED', { output: json(output ?? null) });
    },
    async (err) => {
      await Promise.race([events.catch(() => {}), new Promise((r) => setTimeout(r, 100))]);
      if (err instanceof ExecutionTimeoutError) {
        finish(exec, 'TIMED_OUT', { error: 'States.Timeout', cause: 'The execution ran longer than its TimeoutSeconds' });
      } else if (err instanceof ExecutionAbortedError) {
        finish(exec, 'ABORTED', {}); // stopExecution has finished it already
      } else {
        const e = err?.cause ?? err;
        let error = e?.name;
        let cause = e?.cause ?? e?.message;
        // A Fail state without Error/Cause: the library invents both; AWS leaves them empty.
        const last = exec.lastState?.state;
        if (last?.Type === 'Fail') {
          if (last.Error === undefined && last.ErrorPath === undefined) error = undefined;
          if (last.Cause === undefined && last.CausePath === undefined) cause = undefined;
        }
        finish(exec, 'FAILED', { error, cause: cause === undefined ? undefined : String(cause) });
      }
    },
  );
}

function finish(exec, status, { output, error, cause }) {
  if (exec.closed) return;
  exec.closed = true;
  exec.status = status;
  exec.stopDate = now();
  exec.output = output;
  exec.error = error;
  exec.cause = cause;
  switch (status) {
    case 'SUCCEEDED':
      record(exec, 'ExecutionSucceeded', { executionSucceededEventDetails: { output, outputDetails: noTrunc } });
      break;
    case 'FAILED':
      record(exec, 'ExecutionFailed', { executionFailedEventDetails: { error, cause } });
      break;
    case 'TIMED_OUT':
      record(exec, 'ExecutionTimedOut', { executionTimedOutEventDetails: { error, cause } });
      break;
    default:
      record(exec, 'ExecutionAborted', { executionAbortedEventDetails: { error, cause } });
  }
  closeTokens(exec, 'belongs to an execution that has ended');
  exec.ended.abort();
  exec.closing.resolve(exec);
  statusChanged(exec);
  log(`${exec.arn} ${status}${error ? ` ${error}` : ''}`);
}

/** Ends a running execution as StopExecution does: ABORTED, with error and cause. */
function stopExecution(exec, { error, cause }) {
  if (exec.closed) return;
  exec.stopRun?.();
  finish(exec, 'ABORTED', { error, cause });
}

// ---------------------------------------------------------------- Task states

/**
 * What a Task's Resource calls, named as its history events name it:
 * {kind, resourceType, resource} (lambda invoke, states
 * startExecution.sync:2, aws-sdk:sfn describeExecution...), or null when the
 * local endpoint does not support it.
 */
function taskResource(state) {
  const r = state.Resource;
  if (r === 'arn:aws:states:::lambda:invoke') return { kind: 'invoke', resourceType: 'lambda', resource: 'invoke' };
  if (r === 'arn:aws:states:::lambda:invoke.waitForTaskToken') return { kind: 'callback', resourceType: 'lambda', resource: 'invoke.waitForTaskToken' };
  if (/^arn:aws:lambda:[^:]+:\d{12}:function:[^:]+(:[^:]+)?$/.test(r)) return { kind: 'function', resourceType: 'lambda', resource: r };
  const start = /^arn:aws:states:::states:startExecution(\.sync(?::2)?)?$/.exec(r);
  if (start) return { kind: 'startExecution', resourceType: 'states', resource: `startExecution${start[1] ?? ''}`, sync: start[1] ?? null };
  if (r === 'arn:aws:states:::aws-sdk:sfn:describeExecution') return { kind: 'describeExecution', resourceType: 'aws-sdk:sfn', resource: 'describeExecution' };
  return null;
}

const SUPPORTED_RESOURCES =
  'Lambda: arn:aws:states:::lambda:invoke[.waitForTaskToken] or a function ARN; ' +
  'arn:aws:states:::states:startExecution[.sync|.sync:2]; arn:aws:states:::aws-sdk:sfn:describeExecution';

/**
 * One attempt of a Task: the library's local handler, given the Task's input
 * (after Parameters) and the attempt's timeout in milliseconds as the library
 * computed it (TimeoutSeconds, clamped by prepare, or TimeoutSecondsPath;
 * library-fixes.mjs passes it).
 */
function runTask(exec, name, state, input, timeoutMs) {
  // Synchronous part: the library calls this right after evaluating the
  // Parameters, so exec.pending is this attempt's.
  const pending = exec.pending?.name === name ? exec.pending : null;
  exec.pending = null;
  const res = taskResource(state);
  let token = pending?.token ?? null;
  if (res?.kind === 'callback' && !token) token = mintToken(exec, name);
  const timeoutSeconds = timeoutMs / 1000;
  const ctl = { abort: new AbortController(), timedOut: false };
  // This timer starts before the library's own of the same length, so it
  // fires first: from then on the attempt's outcome is swallowed, and the
  // library's timer fails the Task with its own States.Timeout (which, as on
  // AWS, States.TaskFailed does not match). It closes this attempt's task
  // token and no other: Map iterations and Parallel branches may run other
  // attempts of the same state at the same time, each with its own token.
  const deadline = setTimeout(() => {
    ctl.timedOut = true;
    ctl.abort.abort();
    if (token) closeToken(token, 'timed out');
    if (!exec.closed) {
      const details = { resourceType: res?.resourceType ?? 'lambda', resource: res?.resource ?? state.Resource, error: 'States.Timeout', cause: '' };
      record(exec, 'TaskTimedOut', { taskTimedOutEventDetails: details });
    }
  }, timeoutMs);
  const attempt = attemptTask({ exec, stateName: name, state, res, token, input, timeoutSeconds, ctl }).finally(() => {
    clearTimeout(deadline);
    if (token && token.status !== 'closed') closeToken(token, 'is no longer awaited');
  });
  return new Promise((resolve, reject) => {
    attempt.then(
      (v) => ctl.timedOut || resolve(v),
      (e) => ctl.timedOut || reject(e),
    );
  });
}

/** Runs one attempt of a Task and records its history events; task.res names the integration. */
async function attemptTask(task) {
  const { exec, state, res, input, timeoutSeconds, ctl } = task;
  // Let the library's events so far (StateEntered...) reach the history first.
  await new Promise((r) => setImmediate(r));
  if (exec.closed) throw stateError('States.Runtime', 'the execution has ended', { final: true });
  if (!res) throw stateError('States.Runtime', `Resource ${state.Resource} is not supported by the local endpoint (${SUPPORTED_RESOURCES})`);
  const { resourceType, resource } = res;
  const open = () => !ctl.timedOut && !exec.closed;
  const scheduled = { resourceType, resource, region: REGION, parameters: json(input), timeoutInSeconds: timeoutSeconds };
  if (typeof state.HeartbeatSeconds === 'number') scheduled.heartbeatInSeconds = state.HeartbeatSeconds;
  record(exec, 'TaskScheduled', { taskScheduledEventDetails: scheduled });
  record(exec, 'TaskStarted', { taskStartedEventDetails: { resourceType, resource } });
  // TaskSubmitted: the service took the request, the Task waits for its end.
  task.submitted = (output) => {
    if (open()) record(exec, 'TaskSubmitted', { taskSubmittedEventDetails: { resourceType, resource, output: json(output), outputDetails: noTrunc } });
  };
  let result;
  try {
    result = await integrations[res.kind](task);
  } catch (err) {
    if (open()) record(exec, 'TaskFailed', { taskFailedEventDetails: { resourceType, resource, error: err.name, cause: err.message } });
    throw err;
  }
  if (open()) record(exec, 'TaskSucceeded', { taskSucceededEventDetails: { resourceType, resource, output: json(result), outputDetails: noTrunc } });
  return result;
}

const integrations = {
  invoke: runLambda,
  callback: runLambda,
  function: runLambda,
  startExecution: runStartExecution,
  describeExecution: runDescribeExecution,
};

async function runLambda({ res, token, input, ctl, submitted }) {
  const fn = res.kind === 'function' ? res.resource : input?.FunctionName;
  const payload = res.kind === 'function' ? input : input?.Payload ?? {};
  const out = await invokeFunction(fn, payload, ctl.abort.signal);
  const wrapped = res.kind === 'function' ? out : { ExecutedVersion: '$LATEST', Payload: out, StatusCode: 200 };
  if (res.kind !== 'callback' || ctl.timedOut) return wrapped;
  submitted(wrapped);
  return waitForToken(token);
}

function waitForToken(t) {
  if (t.status === 'closed') return Promise.reject(stateError('States.Runtime', 'the task token is closed', { final: true }));
  if (t.early) {
    const e = t.early;
    t.status = 'closed';
    t.exec.tokens.delete(t);
    return e.ok ? Promise.resolve(e.output) : Promise.reject(stateError(e.error, e.cause));
  }
  t.status = 'waiting';
  return new Promise((resolve, reject) => {
    t.settle = { resolve, reject };
  });
}

function lookupToken(input) {
  const token = requireString(input, 'taskToken');
  if (token.length > 1024) throw apiError('ValidationException', "1 validation error detected: Value at 'taskToken' failed to satisfy constraint: Member must have length less than or equal to 1024");
  if (!TOKEN_RE.test(token)) throw apiError('InvalidToken', 'Invalid Token: the task token is malformed');
  const t = tokens.get(token);
  if (!t) throw apiError('TaskDoesNotExist', 'Task Does Not Exist: no task was given this token');
  if (t.status === 'closed' || t.early) throw apiError('TaskTimedOut', 'Task Timed Out: the task has already finished, failed or timed out');
  return t;
}

function settleToken(t, outcome) {
  if (t.status === 'waiting') {
    const { resolve, reject } = t.settle;
    t.settle = null;
    t.status = 'closed';
    t.exec.tokens.delete(t);
    if (outcome.ok) resolve(outcome.output);
    else reject(stateError(outcome.error, outcome.cause));
  } else {
    // The function has not returned yet: keep the answer for when it does.
    t.early = outcome;
  }
}

api.SendTaskSuccess = (input) => {
  const t = lookupToken(input);
  const text = requireString(input, 'output');
  let output;
  try {
    output = JSON.parse(text);
  } catch (err) {
    throw apiError('InvalidOutput', `Invalid Output: '${err.message}'`);
  }
  settleToken(t, { ok: true, output });
  return {};
};

api.SendTaskFailure = (input) => {
  const t = lookupToken(input);
  const error = optString(input, 'error') ?? '';
  const cause = optString(input, 'cause') ?? '';
  if (error.length > 256) throw apiError('ValidationException', 'error is longer than 256 characters');
  if (cause.length > 32768) throw apiError('ValidationException', 'cause is longer than 32768 characters');
  settleToken(t, { ok: false, error, cause });
  return {};
};

api.SendTaskHeartbeat = (input) => {
  const t = lookupToken(input);
  t.heartbeats++;
  return {};
};

// ---------------------------------------------------------------- Step Functions Tasks

// arn:aws:states:::states:startExecution[.sync|.sync:2], Parameters
// {StateMachineArn, Name?, Input?, TraceHeader?}: StartExecution's own code
// path (so its idempotency too). Without .sync the result is StartExecution's
// answer; with .sync the Task waits until the child closes and its result is
// the child's DescribeExecution answer (syncResult). A refusal fails the Task
// with StepFunctions.<Name>Exception.
async function runStartExecution({ exec, stateName, res, input, ctl, submitted }) {
  const params = input && typeof input === 'object' && !Array.isArray(input) ? input : {};
  let child;
  try {
    child = startExecution({ stateMachineArn: params.StateMachineArn, name: params.Name, input: executionInput(params.Input) });
  } catch (err) {
    throw integrationError(err, 'StepFunctions', (type, id) => `(Service: AWSStepFunctions; Status Code: 400; Error Code: ${type}; Request ID: ${id}; Proxy: null)`);
  }
  const started = { ExecutionArn: child.arn, StartDate: epochMillis(child.startDate) };
  if (!res.sync) return started;
  submitted(started);
  await untilClosed(child, AbortSignal.any([ctl.abort.signal, exec.ended.signal]), () => ({
    cause: `stopped by ${exec.arn}: its Task ${stateName}, which waited for this execution, ${ctl.timedOut ? 'timed out' : 'ended with its execution'}`,
  }));
  const fault = await takeSyncFault(exec.arn);
  if (fault) {
    throw stateError('StepFunctions.AWSStepFunctionsException', `injected fault: the answer of ${child.arn} (${child.status}) was lost after it closed (${fault})`);
  }
  const answer = syncResult(child, res.sync);
  if (child.status === 'SUCCEEDED') return answer;
  throw stateError('States.TaskFailed', JSON.stringify(answer));
}

/**
 * The Task's Input as StartExecution's input member: a JSON value is sent as
 * its JSON text, a string as it is (it must be JSON text itself, else the
 * Task fails with StepFunctions.InvalidExecutionInputException).
 */
function executionInput(v) {
  if (v === undefined) return undefined;
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Resolves when exec has closed; when stop aborts first, stops exec (reason()) and rejects. */
function untilClosed(exec, stop, reason) {
  return new Promise((resolve, reject) => {
    const onStop = () => {
      stopExecution(exec, reason());
      reject(stateError('States.Runtime', 'no longer waited for', { final: true }));
    };
    if (stop.aborted) {
      onStop();
      return;
    }
    stop.addEventListener('abort', onStop, { once: true });
    exec.closing.promise.then(() => {
      stop.removeEventListener('abort', onStop);
      resolve();
    });
  });
}

/**
 * A .sync Task's result: the child's DescribeExecution answer with the
 * integrations' member names, dates in epoch milliseconds, Input and Output
 * as JSON text (.sync) or as JSON values (.sync:2). A child that did not
 * succeed fails the Task with States.TaskFailed and this as JSON text in the
 * Cause (with the child's Error and Cause).
 */
function syncResult(child, sync) {
  const d = describe(child);
  const payload = (text) => (sync === '.sync:2' ? JSON.parse(text) : text);
  const out = {
    ExecutionArn: d.executionArn,
    StateMachineArn: d.stateMachineArn,
    Name: d.name,
    Status: d.status,
    StartDate: epochMillis(d.startDate),
    StopDate: epochMillis(d.stopDate),
    Input: payload(d.input),
    InputDetails: { Included: true },
  };
  if (d.output !== undefined) {
    out.Output = payload(d.output);
    out.OutputDetails = { Included: true };
  }
  if (d.error !== undefined) out.Error = d.error;
  if (d.cause !== undefined) out.Cause = d.cause;
  if (d.stateMachineVersionArn) out.StateMachineVersionArn = d.stateMachineVersionArn;
  out.RedriveCount = d.redriveCount;
  out.RedriveStatus = d.redriveStatus;
  out.RedriveStatusReason = d.redriveStatusReason;
  return out;
}

// arn:aws:states:::aws-sdk:sfn:describeExecution, Parameters {ExecutionArn}:
// the DescribeExecution answer with the SDK integrations' member names
// (PascalCase), Input and Output as JSON text, dates as ISO 8601 text. A
// refusal fails the Task with Sfn.<Name>Exception.
async function runDescribeExecution({ input }) {
  const params = input && typeof input === 'object' && !Array.isArray(input) ? input : {};
  let d;
  try {
    d = describe(findExecution(requireString(params, 'ExecutionArn')));
  } catch (err) {
    throw integrationError(err, 'Sfn', (type, id) => `(Service: Sfn, Status Code: 400, Request ID: ${id})`);
  }
  const out = {};
  for (const [k, v] of Object.entries(d)) {
    const key = k[0].toUpperCase() + k.slice(1);
    if (k === 'startDate' || k === 'stopDate') out[key] = new Date(v * 1000).toISOString();
    else if (k === 'inputDetails' || k === 'outputDetails') out[key] = { Included: v.included };
    else out[key] = v;
  }
  return out;
}

/**
 * An API refusal as a service integration reports it: the error
 * <service>.<Name>Exception (StepFunctions.ExecutionAlreadyExistsException,
 * Sfn.ExecutionDoesNotExistException), the cause the message and what the
 * SDK adds (sdkSuffix(type, requestId)). Anything else passes unchanged.
 */
function integrationError(err, service, sdkSuffix) {
  if (!(err instanceof ApiError)) return err;
  const name = err.type.endsWith('Exception') ? err.type : `${err.type}Exception`;
  return stateError(`${service}.${name}`, `${err.message} ${sdkSuffix(err.type, randomUUID())}`);
}

const epochMillis = (seconds) => (seconds === undefined ? undefined : Math.round(seconds * 1000));

// ---------------------------------------------------------------- test faults

/** parent execution ARN → sync_after_close faults injected so far */
const injectedFaults = new Map();

/**
 * A test hook: the --faults FILE, read again each time a fault may apply (a
 * missing file injects none):
 *
 *   {"sync_after_close": {"<parent execution ARN>": N}}
 *
 * fails the first N .sync/.sync:2 Task attempts of that parent execution once
 * their child has closed, whatever the child's status, with
 * StepFunctions.AWSStepFunctionsException, as if the wait had lost the
 * child's answer. Returns what to say about the fault, or null (no fault).
 */
async function takeSyncFault(parentArn) {
  if (!opts.faults) return null;
  let faults;
  try {
    faults = await readObjectFile(opts.faults);
  } catch (err) {
    throw stateError('States.Runtime', `the faults file ${opts.faults} is not a JSON object: ${err.message}`);
  }
  const table = faults.sync_after_close ?? {};
  const n = typeof table === 'object' && !Array.isArray(table) ? table[parentArn] ?? 0 : NaN;
  if (!Number.isInteger(n) || n < 0) {
    throw stateError('States.Runtime', `the faults file ${opts.faults}: sync_after_close must map execution ARNs to counts`);
  }
  const done = injectedFaults.get(parentArn) ?? 0;
  if (done >= n) return null;
  injectedFaults.set(parentArn, done + 1);
  return `--faults sync_after_close: ${done + 1} of ${n} for ${parentArn}`;
}

// ---------------------------------------------------------------- Lambda under the RIE

// The stack may rewrite a file the server reads (functions, faults) while it
// reads it: a file that does not parse is read again a few times before it
// counts as broken. A missing file is an empty object.
async function readObjectFile(path) {
  let problem = '';
  for (let i = 0; i < 5; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 20));
    let text;
    try {
      text = fs.readFileSync(path, 'utf8');
    } catch (err) {
      if (err.code === 'ENOENT') return {};
      problem = err.message;
      continue;
    }
    try {
      const m = JSON.parse(text);
      if (m && typeof m === 'object' && !Array.isArray(m)) return m;
      problem = 'not a JSON object';
    } catch (err) {
      problem = err.message;
    }
  }
  throw new Error(problem);
}

async function readFunctions() {
  if (!opts.functions) return {};
  try {
    return await readObjectFile(opts.functions);
  } catch (err) {
    throw stateError('Lambda.ServiceException', `the functions file ${opts.functions} is not a JSON object of function name to RIE invoke URL: ${err.message}`);
  }
}

function functionName(fn) {
  if (typeof fn !== 'string' || fn === '') return null;
  let m = /^arn:aws:lambda:[^:]+:\d{12}:function:([^:]+)(?::[^:]+)?$/.exec(fn);
  if (m) return m[1];
  m = /^(?:\d{12}:)?function:([^:]+)(?::[^:]+)?$/.exec(fn);
  if (m) return m[1];
  m = /^([A-Za-z0-9_-]+)(?::[^:]+)?$/.exec(fn);
  return m ? m[1] : null;
}

// The RIE serves one invocation at a time; a second concurrent one crashes
// it (measured: nil pointer dereference after "ReserveFailed: AlreadyReserved").
// So invocations of one invoke URL wait in line, and an invocation keeps its
// place until the RIE has answered, even when its Task timed out meanwhile
// (the RIE goes on running the function until its own timeout).
const queues = new Map(); // invoke URL -> tail promise

function invokeInLine(url, body, signal) {
  const prev = queues.get(url) ?? Promise.resolve();
  let release;
  const mine = new Promise((r) => (release = r));
  const tail = prev.then(() => mine);
  queues.set(url, tail);
  const done = () => {
    release();
    if (queues.get(url) === tail) queues.delete(url);
  };
  return new Promise((resolve, reject) => {
    let started = false;
    const onAbort = () => {
      reject(stateError('States.Timeout', 'the Task timed out'));
      if (!started) done();
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    prev.then(() => {
      if (signal.aborted) return;
      started = true;
      post(url, body)
        .then(resolve, reject)
        .finally(() => {
          signal.removeEventListener('abort', onAbort);
          done();
        });
    });
  });
}

async function invokeFunction(fn, payload, signal) {
  const name = functionName(fn);
  const url = name ? (await readFunctions())[name] : undefined;
  if (typeof url !== 'string' || url === '') {
    throw stateError(
      'Lambda.ResourceNotFoundException',
      `Function not found: ${name ? LAMBDA_PREFIX + name : String(fn)} (Service: Lambda, Status Code: 404, Request ID: ${randomUUID()})`,
    );
  }
  const body = JSON.stringify(payload ?? null);
  const { status, text } = await invokeInLine(url, body, signal);
  if (status === 200) {
    let value;
    try {
      value = text.trim() === '' ? null : JSON.parse(text);
    } catch {
      if (/^Task timed out after/.test(text.trim())) throw stateError('Sandbox.Timedout', text.trim());
      throw stateError('Lambda.Unknown', `The function returned a payload that is not JSON: ${text.slice(0, 1000)}`);
    }
    if (value && typeof value === 'object' && !Array.isArray(value) && typeof value.errorType === 'string' && 'errorMessage' in value) {
      throw stateError(value.errorType, opts.lambdaCause === 'payload' ? text.trim() : String(value.errorMessage ?? ''));
    }
    return value;
  }
  if (status === 502) {
    // The runtime process died (Runtime.ExitError and the like).
    throw stateError('Lambda.Unknown', text.trim() || `the function's runtime exited (HTTP ${status})`);
  }
  throw stateError('Lambda.ServiceException', `HTTP ${status} from the Lambda emulator: ${text.slice(0, 1000)}`);
}

function post(url, body) {
  return new Promise((resolve, reject) => {
    let req;
    try {
      req = http.request(url, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } });
    } catch (err) {
      reject(stateError('Lambda.ServiceException', `invoke ${url}: ${err.message}`));
      return;
    }
    req.on('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => reject(stateError('Lambda.Unknown', `reading the function's answer: ${err.message}`)));
    });
    req.on('error', (err) => {
      if (err.code === 'ECONNREFUSED') reject(stateError('Lambda.ServiceException', `the Lambda emulator at ${url} refused the connection (is it running?)`));
      else reject(stateError('Lambda.Unknown', `the invocation ended without an answer: ${err.code ?? ''} ${err.message}`.trim()));
    });
    req.end(body);
  });
}

// ---------------------------------------------------------------- HTTP

function send(res, status, body, extra = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/x-amz-json-1.0',
    'Content-Length': Buffer.byteLength(text),
    'x-amzn-RequestId': randomUUID(),
    ...extra,
  });
  res.end(text);
}

function sendError(res, err) {
  send(res, err.status, { __type: err.type, message: err.message }, { 'x-amzn-ErrorType': err.type });
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    try {
      if (req.method !== 'POST' || (req.url !== '/' && !req.url.startsWith('/?'))) {
        throw new ApiError('UnknownOperationException', `only POST / is served (AWS JSON 1.0), not ${req.method} ${req.url}`, 404);
      }
      const target = String(req.headers['x-amz-target'] ?? '');
      const m = /^AWSStepFunctions\.(\w+)$/.exec(target);
      if (!m) throw apiError('UnknownOperationException', `missing or unknown X-Amz-Target: '${target}'`);
      const action = m[1];
      if (!Object.hasOwn(api, action)) throw apiError('UnknownOperationException', `${action} is not implemented by the local endpoint`);
      let input;
      try {
        const text = Buffer.concat(chunks).toString('utf8');
        input = text.trim() === '' ? {} : JSON.parse(text);
      } catch (err) {
        throw apiError('SerializationException', `the request body is not JSON: ${err.message}`);
      }
      if (!input || typeof input !== 'object' || Array.isArray(input)) throw apiError('SerializationException', 'the request body is not a JSON object');
      send(res, 200, api[action](input));
    } catch (err) {
      if (err instanceof ApiError) {
        sendError(res, err);
      } else {
        console.error('sfn-local: internal error:', err);
        sendError(res, new ApiError('InternalFailure', String(err?.message ?? err), 500));
      }
    }
  });
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
}

server.on('error', (err) => {
  console.error(`sfn-local: ${err.code === 'EADDRINUSE' ? 'EADDRINUSE: address already in use' : err.message}`);
  process.exit(1);
});

server.listen(opts.port, '127.0.0.1', () => {
  const { port } = server.address();
  log(
    `listening on http://127.0.0.1:${port} (aws-local-stepfunctions 3.0.0, functions ${opts.functions || '(none)'}, ` +
      `lambda cause ${opts.lambdaCause}${opts.faults ? `, test faults ${opts.faults}` : ''})`,
  );
});
