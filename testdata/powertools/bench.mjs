// Anchor benchmark: Powertools for AWS Lambda (TypeScript) idempotency vs a local
// DynamoDB-compatible server (dynalite, in memory).
//
// Usage:
//   node bench.mjs                      # spawns dynalite on a free 127.0.0.1 port, kills it at the end
//   ENDPOINT=http://127.0.0.1:P node bench.mjs   # use an already running server (table is created if absent)
// Env knobs: N (calls per path, default 2000), WARMUP (default 200), REPS (default 3),
//            TABLE (default "idempotency"), OUT (JSON results path, default ./results.json),
//            COUNT=0 to run without the request-counting middlewares,
//            COUNTS_URL=<a counting front's /__counts> (toolgate's infra/local
//            StartCountingFront, which ENDPOINT then names) to report each phase's
//            requests and request bytes as the front counted them
import { spawn } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';

const here = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.N ?? 2000);
const WARMUP = Number(process.env.WARMUP ?? 200);
const REPS = Number(process.env.REPS ?? 3);
const TABLE = process.env.TABLE ?? 'idempotency';
const OUT = process.env.OUT ?? path.join(here, 'results.json');
const COUNT = process.env.COUNT !== '0'; // COUNT=0 disables the request-counting middlewares
const COUNTS_URL = process.env.COUNTS_URL; // a counting front's totals (toolgate's addition)
const frontCounts = async () => (await fetch(COUNTS_URL)).json();

// ---------------------------------------------------------------- dynalite
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

let child;
async function startDynalite() {
  const port = await freePort();
  const args = [path.join(here, 'node_modules/dynalite/cli.js'), '--host', '127.0.0.1', '--port', String(port), '--createTableMs', '0'];
  console.log(`# spawn: node ${args.map((a) => path.relative(here, a) || a).join(' ')}`);
  child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('dynalite did not start in 10s')), 10000);
    child.once('exit', (c) => reject(new Error(`dynalite exited early: ${c}`)));
    child.stdout.on('data', (d) => {
      if (String(d).includes('listening')) { clearTimeout(t); resolve(); }
    });
  });
  console.log(`# dynalite pid ${child.pid} on 127.0.0.1:${port}`);
  return `http://127.0.0.1:${port}`;
}
function stopDynalite() {
  if (child && child.exitCode === null) { try { process.kill(child.pid, 'SIGTERM'); } catch {} }
}
process.on('exit', stopDynalite);

// ---------------------------------------------------------------- clients + counting
const counters = new Map(); // client label -> { commands: {name|name-failed: n}, http: {name: n} }
const sampleBodies = {};    // first request body per command name (for the report)
const sampleErrors = {};

function makeClient(endpoint, label) {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'dummy', secretAccessKey: 'dummy' },
  });
  const c = { commands: {}, http: {} };
  counters.set(label, c);
  if (!COUNT) return client;
  // per command (outcome-level), outermost
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName.replace(/Command$/, '');
      try {
        const out = await next(args);
        c.commands[name] = (c.commands[name] ?? 0) + 1;
        return out;
      } catch (err) {
        const k = `${name}-failed(${err.name})`;
        c.commands[k] = (c.commands[k] ?? 0) + 1;
        if (!sampleErrors[k]) sampleErrors[k] = { name: err.name, hasItem: err.Item !== undefined, httpStatus: err.$metadata?.httpStatusCode };
        throw err;
      }
    },
    { step: 'initialize', priority: 'high', name: 'benchCommandCounter' },
  );
  // per HTTP attempt (inside retry loop and inside the deserializer)
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName.replace(/Command$/, '');
      c.http[name] = (c.http[name] ?? 0) + 1;
      if (!sampleBodies[name] && args.request?.body) {
        const b = args.request.body;
        sampleBodies[name] = JSON.parse(typeof b === 'string' ? b : new TextDecoder().decode(b));
      }
      return next(args);
    },
    { step: 'deserialize', priority: 'low', name: 'benchHttpCounter' },
  );
  return client;
}
function resetCounts(label) { const c = counters.get(label); c.commands = {}; c.http = {}; }
function snapshot(label, calls) {
  const c = counters.get(label);
  const per = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, +(v / calls).toFixed(4)]));
  return { commandsPerCall: per(c.commands), httpPerCall: per(c.http), httpTotalPerCall: +(Object.values(c.http).reduce((a, b) => a + b, 0) / calls).toFixed(4) };
}

async function ensureTable(client) {
  try {
    await client.send(new CreateTableCommand({
      TableName: TABLE,
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }));
  } catch (e) {
    if (e.name !== 'ResourceInUseException') throw e;
  }
  for (let i = 0; i < 100; i++) {
    const d = await client.send(new DescribeTableCommand({ TableName: TABLE }));
    if (d.Table.TableStatus === 'ACTIVE') return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('table not ACTIVE');
}

// ---------------------------------------------------------------- stats
function stats(samplesNs) {
  const us = Float64Array.from(samplesNs, (x) => Number(x) / 1000).sort();
  const q = (p) => us[Math.min(us.length - 1, Math.max(0, Math.ceil(p * us.length) - 1))];
  const mean = us.reduce((a, b) => a + b, 0) / us.length;
  return { n: us.length, mean: +mean.toFixed(2), p50: +q(0.5).toFixed(2), p99: +q(0.99).toFixed(2) };
}
async function timeLoop(n, fn) {
  const s = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await fn(i);
    s[i] = process.hrtime.bigint() - t0;
  }
  return stats(s);
}
const median = (xs) => { const a = [...xs].sort((x, y) => x - y); return a[Math.floor(a.length / 2)]; };

// ---------------------------------------------------------------- main
async function main() {
  const endpoint = process.env.ENDPOINT ?? (await startDynalite());
  const pkgVer = (p) => JSON.parse(readFileSync(path.join(here, 'node_modules', p, 'package.json'), 'utf8')).version;
  const versions = {
    node: process.version,
    idempotency: pkgVer('@aws-lambda-powertools/idempotency'),
    commons: pkgVer('@aws-lambda-powertools/commons'),
    clientDynamodb: pkgVer('@aws-sdk/client-dynamodb'),
    libDynamodb: pkgVer('@aws-sdk/lib-dynamodb'),
    dynalite: pkgVer('dynalite'),
  };
  console.log('# versions', JSON.stringify(versions));

  const idemClient = makeClient(endpoint, 'idem');
  const rawClient = makeClient(endpoint, 'raw');
  await ensureTable(rawClient);

  const persistenceStore = new DynamoDBPersistenceLayer({ tableName: TABLE, awsSdkV3Client: idemClient });
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'key' });

  const bare = async (event, _context) => ({ ok: true, n: event.n });
  const idem = makeIdempotent(bare, { persistenceStore, config });

  const ctx = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: 'bench',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench',
    memoryLimitInMB: '128',
    awsRequestId: '00000000-0000-0000-0000-000000000000',
    logGroupName: '/aws/lambda/bench',
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => 30000,
    done() {}, fail() {}, succeed() {},
  };

  const check = (r, n) => { if (!r || r.ok !== true || r.n !== n) throw new Error(`bad result ${JSON.stringify(r)} for n=${n}`); };
  const ev = (tag, i) => ({ key: `${tag}-${i}`, n: i });

  // warm-up: WARMUP calls of each path
  for (let i = 0; i < WARMUP; i++) check(await idem(ev('warm', i), ctx), i);
  for (let i = 0; i < WARMUP; i++) check(await idem(ev('warm', i), ctx), i);
  for (let i = 0; i < WARMUP; i++) check(await bare(ev('warm', i), ctx), i);
  for (let i = 0; i < WARMUP; i++) await rawClient.send(new PutItemCommand({ TableName: TABLE, Item: { id: { S: `rawwarm-${i}` }, v: { N: String(i) } } }));
  for (let i = 0; i < WARMUP; i++) await rawClient.send(new GetItemCommand({ TableName: TABLE, Key: { id: { S: `rawwarm-${i}` } }, ConsistentRead: true }));

  // Powertools-shaped requests, sent directly (no Powertools code) to split server vs client cost
  const condPutInput = (id) => {
    const now = Date.now();
    return {
      TableName: TABLE,
      Item: { id: { S: id }, expiration: { N: String(Math.round(now / 1000) + 3600) }, status: { S: 'INPROGRESS' }, in_progress_expiration: { N: String(now + 30000) } },
      ExpressionAttributeNames: { '#id': 'id', '#expiry': 'expiration', '#in_progress_expiry': 'in_progress_expiration', '#status': 'status' },
      ExpressionAttributeValues: { ':now': { N: String(now / 1000) }, ':now_in_millis': { N: String(now) }, ':inprogress': { S: 'INPROGRESS' } },
      ConditionExpression: 'attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
  };
  const updateInput = (id, n) => ({
    TableName: TABLE,
    Key: { id: { S: id } },
    UpdateExpression: 'SET #expiry = :expiry, #status = :status, #response_data = :response_data',
    ExpressionAttributeNames: { '#expiry': 'expiration', '#status': 'status', '#response_data': 'data' },
    ExpressionAttributeValues: { ':expiry': { N: String(Math.round(Date.now() / 1000) + 3600) }, ':status': { S: 'COMPLETED' }, ':response_data': { M: { ok: { BOOL: true }, n: { N: String(n) } } } },
  });
  const expectCCF = async (p) => { try { await p; } catch (e) { if (e.name === 'ConditionalCheckFailedException') return; throw e; } throw new Error('condition unexpectedly passed'); };

  // CPU accounting: this process via process.cpuUsage(); the server via /proc/<pid>/stat (utime+stime, clock ticks)
  const serverPid = child?.pid ?? (process.env.SERVER_PID ? Number(process.env.SERVER_PID) : undefined);
  const clkTck = 100; // Linux USER_HZ
  const serverCpuUs = () => {
    if (!serverPid) return NaN;
    try {
      const f = readFileSync(`/proc/${serverPid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(f[11]) + Number(f[12])) * (1e6 / clkTck);
    } catch { return NaN; }
  };
  async function phase(n, fn, label) {
    if (label) resetCounts(label);
    const f0 = COUNTS_URL ? await frontCounts() : undefined;
    const c0 = process.cpuUsage(); const s0 = serverCpuUs();
    const st = await timeLoop(n, fn);
    const c1 = process.cpuUsage(c0); const s1 = serverCpuUs();
    st.clientCpuUsPerCall = +((c1.user + c1.system) / n).toFixed(1);
    st.serverCpuUsPerCall = +((s1 - s0) / n).toFixed(1);
    if (f0) {
      const f1 = await frontCounts();
      st.frontRequestsPerCall = +((f1.requests - f0.requests) / n).toFixed(3);
      st.bodyBytesPerCall = +((f1.body_bytes - f0.body_bytes) / n).toFixed(1);
      st.headerBytesPerCall = +((f1.header_bytes - f0.header_bytes) / n).toFixed(1);
    }
    if (label && COUNT) st.requests = snapshot(label, n);
    return st;
  }

  // warm-up for the direct (floor) request shapes too
  for (let i = 0; i < WARMUP; i++) await rawClient.send(new PutItemCommand(condPutInput(`cpwarm-${i}`)));
  for (let i = 0; i < WARMUP; i++) await rawClient.send(new UpdateItemCommand(updateInput(`cpwarm-${i}`, i)));
  for (let i = 0; i < WARMUP; i++) await expectCCF(rawClient.send(new PutItemCommand(condPutInput(`cpwarm-${i}`))));

  const PHASES = ['first', 'replay', 'bare', 'rawPut', 'rawGet', 'condPut', 'update', 'condPutFail'];
  const reps = [];
  for (let r = 0; r < REPS; r++) {
    const tag = `r${r}`;
    const rep = {};
    rep.first = await phase(N, async (i) => check(await idem(ev(tag, i), ctx), i), 'idem');   // a: claim + complete
    rep.replay = await phase(N, async (i) => check(await idem(ev(tag, i), ctx), i), 'idem');  // b: replay of completed keys
    rep.bare = await phase(N, async (i) => check(await bare(ev(tag, i), ctx), i));             // c: bare handler
    // floors (direct SDK calls, no Powertools)
    rep.rawPut = await phase(N, (i) => rawClient.send(new PutItemCommand({ TableName: TABLE, Item: { id: { S: `raw-${tag}-${i}` }, v: { N: String(i) } } })), 'raw');
    rep.rawGet = await phase(N, (i) => rawClient.send(new GetItemCommand({ TableName: TABLE, Key: { id: { S: `raw-${tag}-${i}` } }, ConsistentRead: true })), 'raw');
    rep.condPut = await phase(N, (i) => rawClient.send(new PutItemCommand(condPutInput(`cp-${tag}-${i}`))), 'raw');
    rep.update = await phase(N, (i) => rawClient.send(new UpdateItemCommand(updateInput(`cp-${tag}-${i}`, i))), 'raw');
    rep.condPutFail = await phase(N, (i) => expectCCF(rawClient.send(new PutItemCommand(condPutInput(`cp-${tag}-${i}`)))), 'raw');
    reps.push(rep);
    console.log(`# rep ${r} (us/call: mean p50 p99 | clientCPU serverCPU)`);
    for (const k of PHASES) console.log(`#   ${k.padEnd(12)} ${rep[k].mean} ${rep[k].p50} ${rep[k].p99} | ${rep[k].clientCpuUsPerCall} ${rep[k].serverCpuUsPerCall}`);
    if (COUNT) {
      console.log(`#   requests/call first  ${JSON.stringify(rep.first.requests)}`);
      console.log(`#   requests/call replay ${JSON.stringify(rep.replay.requests)}`);
    }
  }

  const med = {};
  const fields = ['mean', 'p50', 'p99', 'clientCpuUsPerCall', 'serverCpuUsPerCall'];
  if (COUNTS_URL) fields.push('frontRequestsPerCall', 'bodyBytesPerCall', 'headerBytesPerCall');
  for (const k of PHASES) med[k] = Object.fromEntries(fields.map((s) => [s, median(reps.map((x) => x[k][s]))]));
  med.overheadFirst = Object.fromEntries(fields.map((s) => [s, +(med.first[s] - med.bare[s]).toFixed(2)]));
  med.overheadReplay = Object.fromEntries(fields.map((s) => [s, +(med.replay[s] - med.bare[s]).toFixed(2)]));

  const result = { versions, endpoint, N, WARMUP, REPS, COUNT, medians_us: med, reps, sampleBodies, sampleErrors, cpus: (await import('node:os')).cpus().length };
  writeFileSync(OUT, JSON.stringify(result, null, 2));
  console.log('# medians (us):');
  console.table(Object.fromEntries(Object.entries(med)));
  console.log('# sample request bodies:', JSON.stringify(sampleBodies, null, 1));
  console.log('# sample errors:', JSON.stringify(sampleErrors));
  console.log(`# wrote ${OUT}`);
}

main().then(() => { stopDynalite(); }, (e) => { console.error(e); stopDynalite(); process.exitCode = 1; });
