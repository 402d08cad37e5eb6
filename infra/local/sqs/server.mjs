// The local SQS endpoint (infra/local/sqs Start): npm local-aws-sqs 2.0.2,
// which serves the AWS JSON 1.0 protocol aws-sdk-go-v2 speaks, listening on
// 127.0.0.1 only. The library has no command-line entry; this is it.
//
//   node server.mjs PORT REGION ACCOUNT_ID [--as-published]
//
// Queue URLs are http://127.0.0.1:PORT/ACCOUNT_ID/NAME and queue ARNs
// arn:aws:sqs:REGION:ACCOUNT_ID:NAME. Queues and messages live in memory
// until the process ends (SIGTERM). One line "sqs-local: listening on URL"
// on stdout means ready.
//
// Two corrections are made to the library as it loads (nothing in
// node_modules changes; a library without exactly the text it replaces does
// not load):
//   - its ChangeMessageVisibility adds one to the message's
//     ApproximateReceiveCount, as a receive does. SQS counts receives only,
//     so a consumer that sets a per-attempt visibility timeout after each
//     failure saw counts 1, 3, 5, ... and its message reached the
//     dead-letter queue after about half of maxReceiveCount deliveries.
//   - its ApproximateNumberOfMessages counts the messages in flight too;
//     SQS counts those available for retrieval only (in flight is
//     ApproximateNumberOfMessagesNotVisible).
// --as-published loads the library unchanged (the package's tests measure
// what it does).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire, Module } from 'node:module';

const [port, region, accountId, flag] = process.argv.slice(2);

// [wrong, right, how many times the library has it]. The library's
// "set invisible" function (its third argument is true only when called by
// changeVisibility, to keep the receipt handle) counts a receive.
const FIXES = [
  [
    'let n=Number(t.record.attributes.ApproximateReceiveCount)+1;',
    'let n=Number(t.record.attributes.ApproximateReceiveCount)+(i?0:1);',
    1,
  ],
  [
    'ApproximateNumberOfMessages:String(S(this,E).filter(o=>!o.delayed).length)',
    'ApproximateNumberOfMessages:String(S(this,E).filter(o=>!o.delayed&&o.visible).length)',
    1,
  ],
];

function loadLibrary(fix) {
  const require = createRequire(import.meta.url);
  const file = require.resolve('local-aws-sqs');
  if (!fix) return require(file);
  let source = fs.readFileSync(file, 'utf8');
  for (const [wrong, right, times] of FIXES) {
    const found = source.split(wrong).length - 1;
    if (found !== times) {
      throw new Error(`sqs-local: library fix: expected ${times} × "${wrong}" in ${file}, found ${found}: is local-aws-sqs still 2.0.2?`);
    }
    source = source.replaceAll(wrong, right);
  }
  const m = new Module(file);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(source, file);
  return m.exports;
}

const { createSqsServer } = loadLibrary(flag !== '--as-published');
await createSqsServer({
  port: Number(port),
  hostname: '127.0.0.1',
  region,
  accountId,
  // A test may delete a queue and create it again at once.
  emulateQueueCreationLifecycle: false,
});
console.log(`sqs-local: listening on http://127.0.0.1:${port}${flag === '--as-published' ? ' (library as published)' : ''}`);
