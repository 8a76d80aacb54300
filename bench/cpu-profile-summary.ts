/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`) by where the self time went: per
 * component (dynalite, its LevelDB, the AWS SDK, ws, the handlers, Node internals, GC, idle)
 * and per function. Used for the local load benchmark's profile in docs/benchmarks.md:
 *
 *   node bench/cpu-profile-summary.ts <file.cpuprofile> [top=25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  components: { name: string; ms: number; share: number }[];
  functions: { name: string; component: string; ms: number; share: number }[];
}

/** Most specific first: the first match names a frame's component. */
const COMPONENTS: [string, RegExp][] = [
  ['dynalite', /node_modules\/dynalite\//],
  [
    'dynalite storage (LevelDB, memory-level, lazy, big.js)',
    /node_modules\/(classic-level|memory-level|abstract-level|level[^/]*|memdown|subleveldown|lazy|big\.js|async|once)\//,
  ],
  ['AWS SDK (client, smithy, marshalling)', /node_modules\/(@aws-sdk|@smithy|@aws-crypto)\//],
  ['ws', /node_modules\/ws\//],
  ['powertools, middy, zod', /node_modules\/(@aws-lambda-powertools|@middy|zod)\//],
  ['other dependencies', /node_modules\//],
  ['handlers and lib (functions/, lib/)', /\/(functions|lib)\//],
  ['local gateway (infra/local/)', /\/infra\/local\//],
  ['Node internals (http, net, streams, crypto)', /^node:/],
];

function componentOf(node: ProfileNode): string {
  const { functionName, url } = node.callFrame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)') return 'V8/native (program)';
  for (const [name, pattern] of COMPONENTS) if (pattern.test(url)) return name;
  return url === '' ? 'native (no script)' : 'other';
}

const UNATTRIBUTED = new Set([
  'Node internals (http, net, streams, crypto)',
  'native (no script)',
  'other',
]);

/**
 * Node's http/net/stream code and natives run on behalf of someone: dynalite's HTTP server or
 * the SDK's HTTP client. Their time is charged to the nearest caller on the stack that belongs
 * to a component (marked "via"), so the split shows who the store and the client really cost.
 */
function attributedComponent(
  node: ProfileNode,
  byId: Map<number, ProfileNode>,
  parentOf: Map<number, number>,
): string {
  const own = componentOf(node);
  if (!UNATTRIBUTED.has(own)) return own;
  for (let id = parentOf.get(node.id); id !== undefined; id = parentOf.get(id)) {
    const caller = byId.get(id);
    if (!caller) break;
    const component = componentOf(caller);
    if (!UNATTRIBUTED.has(component) && component !== 'V8/native (program)')
      return `${component} (via Node/native)`;
  }
  return own;
}

export function summariseProfile(profile: CpuProfile, top = 25): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const components = new Map<string, number>();
  const functions = new Map<string, { component: string; us: number }>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const component = attributedComponent(node, byId, parentOf);
    components.set(component, (components.get(component) ?? 0) + us);
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/main\//, '');
    const name = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    const entry = functions.get(name) ?? { component, us: 0 };
    entry.us += us;
    functions.set(name, entry);
  }
  const share = (us: number) => us / totalUs;
  return {
    totalMs: totalUs / 1000,
    components: [...components]
      .map(([name, us]) => ({ name, ms: us / 1000, share: share(us) }))
      .sort((a, b) => b.ms - a.ms),
    functions: [...functions]
      .map(([name, { component, us }]) => ({ name, component, ms: us / 1000, share: share(us) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: node bench/cpu-profile-summary.ts <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  const summary = summariseProfile(JSON.parse(readFileSync(file, 'utf8')), Number(top ?? 25));
  const pct = (share: number) => `${(share * 100).toFixed(1)}%`;
  process.stdout.write(`total ${(summary.totalMs / 1000).toFixed(2)} s sampled\n\n`);
  for (const c of summary.components)
    process.stdout.write(
      `${pct(c.share).padStart(6)} ${c.ms.toFixed(0).padStart(7)} ms  ${c.name}\n`,
    );
  process.stdout.write('\n');
  for (const f of summary.functions)
    process.stdout.write(
      `${pct(f.share).padStart(6)} ${f.ms.toFixed(0).padStart(7)} ms  ${f.name}\n`,
    );
}
