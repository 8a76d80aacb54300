import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WebSocketServer } from 'ws';
import { agentNodeFlags } from './agent-memory.ts';

/**
 * What the agent's resident memory cannot go below, and what the real path on a VM adds that
 * the hour bench (bench/agent-memory.ts: ws:// to a local runtime) does not: wss:// to API
 * Gateway, which builds a TLS context with Node's root certificates. Each variant is a fresh
 * node process with the systemd unit's flags that loads what it names, holds one WebSocket
 * open to a server in this process (an echo, plain or TLS with a certificate made here) for a
 * few seconds, and reports its RSS after a forced GC. The TLS server's certificate is trusted
 * through NODE_EXTRA_CA_CERTS, so Node's own root store is still loaded as on a VM; the last
 * variant trusts only it (`ca`), to tell the root store's share from TLS's.
 */
export interface FloorRow {
  variant: string;
  runs: number;
  /** Medians over the runs. */
  rssMb: number;
  anonMb: number;
  fileMb: number;
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_FLOOR_RUNS ?? 3);

// In the child: RSS, anonymous and file-backed (MB) from /proc/self/status.
const STATUS = `() => Object.fromEntries(require('node:fs').readFileSync('/proc/self/status', 'utf8').split('\\n')
  .filter((l) => /^(VmRSS|RssAnon|RssFile):/.test(l)).map((l) => [l.split(':')[0], Number(l.split(/\\s+/)[1]) / 1024]))`;

// `node -e`: a CommonJS script that only waits, collects and reports.
const BARE = `setTimeout(() => { globalThis.gc(); setTimeout(() => process.stdout.write(JSON.stringify((${STATUS})()) + '\\n'), 500); }, 3000);`;

// The child: loads per VARIANT, connects, exchanges a message, rests, GCs, reports.
const CHILD = `
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
const require = createRequire(process.env.FLOOR_ROOT + '/package.json');
const variant = process.env.FLOOR_VARIANT;
const status = ${STATUS};
const report = async () => {
  await new Promise((r) => setTimeout(r, 3000));
  globalThis.gc();
  await new Promise((r) => setTimeout(r, 500));
  process.stdout.write(JSON.stringify(status()) + '\\n');
};
process.getBuiltinModule('node:http');
const WebSocket = require('ws');
if (variant.includes('yaml')) {
  require('yaml').parse(readFileSync(process.env.FLOOR_ROOT + '/packaging/agent.example.yaml', 'utf8'));
}
const options = variant.includes('own-ca') ? { ca: readFileSync(process.env.FLOOR_CA, 'utf8') } : {};
const socket = new WebSocket(variant.includes('wss') ? process.env.FLOOR_WSS : process.env.FLOOR_WS, options);
socket.on('error', (error) => { console.error(error.message); process.exit(1); });
socket.on('open', () => socket.send('{"action":"ping"}'));
socket.once('message', async () => {
  await report();
  socket.terminate();
  process.exit(0);
});
`;

const VARIANTS: [string, string][] = [
  ['bare', '`node -e` (nothing loaded)'],
  ['ws', 'node:http + ws, one ws:// connection (the hour bench)'],
  ['ws+yaml', '... + yaml, the config file parsed'],
  ['wss', "node:http + ws, one wss:// connection, Node's root CAs (a VM)"],
  ['wss+own-ca', '... wss:// trusting only the test CA (no root store)'],
];

export async function measureMemoryFloor(nodeFlags: string[]): Promise<FloorRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-floor-'));
  const servers: Server[] = [];
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'],
        ...['-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'],
        ...['-addext', 'subjectAltName=IP:127.0.0.1'],
      ],
      { stdio: 'ignore' },
    );
    const plain = createHttpServer();
    const tls = createHttpsServer({ key: readFileSync(key), cert: readFileSync(cert) });
    for (const server of [plain, tls]) {
      servers.push(server);
      const wss = new WebSocketServer({ server });
      wss.on('connection', (socket) => socket.on('message', (data) => socket.send(data)));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    }
    const port = (server: Server) => (server.address() as AddressInfo).port;
    const script = join(dir, 'child.mjs');
    writeFileSync(script, CHILD);
    const env = {
      PATH: process.env.PATH ?? '',
      FLOOR_ROOT: ROOT,
      FLOOR_CA: cert,
      FLOOR_WS: `ws://127.0.0.1:${port(plain)}/`,
      FLOOR_WSS: `wss://127.0.0.1:${port(tls)}/`,
    };
    const rows: FloorRow[] = [];
    for (const [variant, label] of VARIANTS) {
      const runs: Record<string, number>[] = [];
      for (let i = 0; i < RUNS; i++) {
        const extra: Record<string, string> =
          variant === 'wss' ? { NODE_EXTRA_CA_CERTS: cert } : {};
        const program = variant === 'bare' ? ['-e', BARE] : [script];
        runs.push(
          await runChild([...nodeFlags, '--expose-gc', ...program], {
            ...env,
            ...extra,
            FLOOR_VARIANT: variant,
          }),
        );
      }
      const median = (key: string) => {
        const sorted = runs.map((r) => r[key] ?? 0).sort((a, b) => a - b);
        return Math.round((sorted[Math.floor(sorted.length / 2)] ?? 0) * 10) / 10;
      };
      rows.push({
        variant: label,
        runs: RUNS,
        rssMb: median('VmRSS'),
        anonMb: median('RssAnon'),
        fileMb: median('RssFile'),
      });
    }
    return rows;
  } finally {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

function runChild(args: string[], env: Record<string, string>): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0 && out.trim()) resolve(JSON.parse(out.trim()) as Record<string, number>);
      else reject(new Error(`floor child ${env.FLOOR_VARIANT} exited ${code}: ${err.trim()}`));
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const flags = agentNodeFlags();
  console.log(JSON.stringify({ nodeFlags: flags, rows: await measureMemoryFloor(flags) }, null, 2));
}
