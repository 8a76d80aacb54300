/**
 * `node --import ./scripts/async-context-frame.js infra/local/main.ts` (npm start, the load
 * bench): the local runtime runs every invocation in one process and scopes each one's
 * Powertools state with AsyncLocalStorage (infra/local/invocation-scope.ts). On Node 22 that
 * storage hooks every promise the process makes, which cost a quarter of the runtime's main
 * thread in a burst of connects (docs/benchmarks.md, "Local end to end"), unless Node runs with
 * `--experimental-async-context-frame`. Node 24 does so by default and refuses the flag.
 *
 * So where the flag exists and is not set, this replaces the process, before the entry point
 * loads, with the same command plus the flag: same PID, same stdio, same environment, so Ctrl-C,
 * `kill` and a parent's pipes behave as before. Plain JavaScript: it runs before TypeScript.
 */
const FLAG = '--experimental-async-context-frame';

const supported = process.allowedNodeEnvironmentFlags.has(FLAG);
const set = process.execArgv.includes(FLAG) || (process.env.NODE_OPTIONS ?? '').includes(FLAG);
if (supported && !set && typeof process.execve === 'function') {
  try {
    process.execve(
      process.execPath,
      [process.execPath, FLAG, ...process.execArgv, ...process.argv.slice(1)],
      process.env,
    );
  } catch {
    // Newer Node throws when execve(2) fails (Node 22 aborts, for a binary that is running
    // now: not seen). The runtime then runs as it is, with the hooks' cost.
  }
}
