// Module loader hooks that correct aws-local-stepfunctions 3.0.0 where it
// computes wrong results, as it is loaded (server.mjs registers them before it
// imports the library; nothing in node_modules changes).
//
// States.Hash: every algorithm reads the message block at a word index used
// as a byte offset, so any message of 56 bytes or more (more than one block
// once padded) hashes wrong; an execution ARN is usually longer than that.
// Measured against node:crypto: lengths 0-55 agree, 56 and above do not.
// The fix reads block word t at byte (i + t) * wordSize. server.mjs checks
// every algorithm against node:crypto when it starts.

const LIBRARY = /\/aws-local-stepfunctions\/build\/main\.node\.esm\.js$/;

// [wrong, right, how many times the library has it]
const FIXES = [
  ['dataView.getUint32(i + t * 4, true)', 'dataView.getUint32((i + t) * 4, true)', 1], // MD5 (little-endian words)
  ['dataView.getUint32(i + t * 4)', 'dataView.getUint32((i + t) * 4)', 2], // SHA-1, SHA-256
  ['dataView.getBigUint64(i + t * 8)', 'dataView.getBigUint64((i + t) * 8)', 2], // SHA-384, SHA-512
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
  return { ...loaded, source };
}
