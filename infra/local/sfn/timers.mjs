// Waits longer than a Node timer can wait, for the local Step Functions
// endpoint. setTimeout takes at most 2^31-1 ms (about 24.8 days); a longer
// delay fires at once, after a TimeoutOverflowWarning. Step Functions waits
// up to a year (a Wait state, a Retry interval), so the library's sleep
// (library-fixes.mjs makes it call this one) arms timers of at most that
// length, one after the other, until the whole delay has passed.

/** The longest delay setTimeout waits for, in milliseconds (2^31-1). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

let onLong = null;

/**
 * Sets fn(ms) to be called, synchronously, each time sleep is asked to wait
 * longer than MAX_TIMER_MS (server.mjs logs it). One listener; null removes it.
 */
export function onLongSleep(fn) {
  onLong = fn;
}

/**
 * aws-local-stepfunctions 3.0.0's sleep(ms, abortSignal), unchanged up to
 * MAX_TIMER_MS: resolves after ms milliseconds, or at once when abortSignal
 * aborts; 0 returns undefined. A longer delay is waited in steps of at most
 * MAX_TIMER_MS instead of firing at once.
 */
export function sleep(ms, abortSignal) {
  if (ms === 0) return;
  if (ms > MAX_TIMER_MS) onLong?.(ms);
  return new Promise((resolve) => {
    if (abortSignal?.aborted) {
      return resolve();
    }
    let timeout;
    let left = ms; // NaN and negative delays fire at once, as setTimeout has them
    const onAbort = () => {
      clearTimeout(timeout);
      resolve();
    };
    const arm = () => {
      const step = left > MAX_TIMER_MS ? MAX_TIMER_MS : left;
      left -= step;
      timeout = setTimeout(() => {
        if (left > 0) return arm();
        abortSignal?.removeEventListener('abort', onAbort);
        resolve();
      }, step);
    };
    arm();
    abortSignal?.addEventListener('abort', onAbort, { once: true });
  });
}
