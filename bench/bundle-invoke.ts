/**
 * One Lambda cold start, as the runtime does it: this fresh process imports a function's
 * bundle (no source maps, nothing loaded before), invokes its handler once (the first
 * invocation: clients built, first request signed and sent), then `warm` more times.
 * `node bench/bundle-invoke.ts <index.mjs> <events.json>`; prints one `RESULT {json}` line
 * after whatever the function logged. Run by bench/bundle-pairs.ts.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [bundle, eventsFile] = process.argv.slice(2);
if (!bundle || !eventsFile) throw new Error('usage: bundle-invoke.ts <index.mjs> <events.json>');
const { functionName, events } = JSON.parse(readFileSync(eventsFile, 'utf8')) as {
  functionName: string;
  events: unknown[];
};

const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

function context() {
  const deadline = Date.now() + 10_000;
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: crypto.randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

/** Whether the function answered as on its common path (Allow, or a 200). */
function accepted(result: unknown): boolean {
  const r = result as {
    statusCode?: number;
    policyDocument?: { Statement?: { Effect?: string }[] };
  };
  return r.policyDocument?.Statement?.[0]?.Effect === 'Allow' || r.statusCode === 200;
}

let start = process.cpuUsage();
let t = performance.now();
const { handler } = (await import(pathToFileURL(bundle).href)) as { handler: Handler };
const importMs = performance.now() - t;
// From this process's start (performance.timeOrigin): Node's bootstrap, this runner (its types
// stripped first) and the bundle; an upper bound of what a cold Lambda init spends before the
// handler can run, where `importMs` is the bundle's share alone.
const initMs = performance.now();
const importCpuMs = cpuMs(start);

const [first, ...rest] = events;
start = process.cpuUsage();
t = performance.now();
const firstResult = await handler(first, context());
const firstMs = performance.now() - t;
const firstCpuMs = cpuMs(start);

let ok = accepted(firstResult);
start = process.cpuUsage();
t = performance.now();
for (const event of rest) ok = accepted(await handler(event, context())) && ok;
const warmCpuMs = rest.length > 0 ? cpuMs(start) / rest.length : Number.NaN;
const warmMs = rest.length > 0 ? (performance.now() - t) / rest.length : Number.NaN;

process.stdout.write(
  `\nRESULT ${JSON.stringify({ importMs, initMs, importCpuMs, firstMs, firstCpuMs, warmMs, warmCpuMs, ok })}\n`,
);
