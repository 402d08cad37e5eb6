// Module loader hooks that correct aws-local-stepfunctions 3.0.0 where it
// computes wrong results, as it is loaded (server.mjs registers them before it
// imports the library; nothing in node_modules changes). Each fix replaces
// text the library has an exact number of times; a library without it does
// not load.
//
// States.Hash: every algorithm reads the message block at a word index used
// as a byte offset, so any message of 56 bytes or more (more than one block
// once padded) hashes wrong; an execution ARN is usually longer than that.
// Measured against node:crypto: lengths 0-55 agree, 56 and above do not.
// The fix reads block word t at byte (i + t) * wordSize. server.mjs checks
// every algorithm against node:crypto when it starts.
//
// Long waits: the library's sleep (Wait states, Retry intervals) is one
// setTimeout, which fires at once for more than 2^31-1 ms (about 24.8 days).
// The library's own is renamed away and timers.mjs's sleep, which waits in
// steps, is imported in its place.
//
// $$.Execution: every run of the library's StateMachine sets
// $$.Execution.Input to its own input and StartTime to the moment it starts,
// and Map iterations and Parallel branches are runs of their own, so inside
// them these were the item or the branch input and a later time. The
// Execution members of the context the caller passes (server.mjs passes the
// execution's Input and StartTime) now win over the run's own.
//
// Task timeouts: the library calls the Task's local handler, then computes
// the attempt's timeout (TimeoutSeconds, or TimeoutSecondsPath evaluated on
// the Task's input) and races the handler with it. The handler is now given
// that timeout, {timeoutMs}, computed first, so server.mjs times out the
// attempt itself (its timer starts before the library's, so it fires first)
// and closes that attempt's task token only. A TimeoutSecondsPath that does
// not evaluate to an integer >= 1 now fails the Task before the handler runs
// (before, the function was invoked and its answer dropped).

const LIBRARY = /\/aws-local-stepfunctions\/build\/main\.node\.esm\.js$/;
const TIMERS = new URL('./timers.mjs', import.meta.url).href;

// [wrong, right, how many times the library has it]
const FIXES = [
  ['dataView.getUint32(i + t * 4, true)', 'dataView.getUint32((i + t) * 4, true)', 1], // MD5 (little-endian words)
  ['dataView.getUint32(i + t * 4)', 'dataView.getUint32((i + t) * 4)', 2], // SHA-1, SHA-256
  ['dataView.getBigUint64(i + t * 8)', 'dataView.getBigUint64((i + t) * 8)', 2], // SHA-384, SHA-512
  // timers.mjs's sleep is imported (below) in place of this one.
  ['function sleep(ms, abortSignal) {', 'function librarySleep(ms, abortSignal) {', 1],
  [
    `      Execution: {
        ...options.runOptions?.context?.Execution,
        Input: input,
        StartTime: (/* @__PURE__ */ new Date()).toISOString()
      }`,
    `      Execution: {
        Input: input,
        StartTime: (/* @__PURE__ */ new Date()).toISOString(),
        ...options.runOptions?.context?.Execution
      }`,
    1,
  ],
  ['options.overrideFn(input)', 'options.overrideFn(input, { timeoutMs: this.getTimeoutMs(input, context) })', 1],
];

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  if (!LIBRARY.test(url)) return loaded;
  let source = String(loaded.source);
  for (const [wrong, right, times] of FIXES) {
    const found = source.split(wrong).length - 1;
    if (found !== times) {
      throw new Error(`sfn-local: library fix: expected ${times} × "${wrong}" in ${url}, found ${found}: is aws-local-stepfunctions still 3.0.0?`);
    }
    source = source.replaceAll(wrong, right);
  }
  source = `import { sleep } from ${JSON.stringify(TIMERS)};\n${source}`;
  return { ...loaded, source };
}
