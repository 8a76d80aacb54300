/**
 * Adds the lock entries npm leaves out when the registry it talks to does not serve other
 * platforms' binaries (a mirror that answers 404 for @esbuild/darwin-arm64 and the like).
 * Without them `npm ci` refuses the lock ("Missing: ... from lock file") on every machine,
 * and on another platform it could not install its binary at all.
 *
 * Each added entry is what npm itself writes for a platform package it cannot install here:
 * the version, `optional`, and the `os`/`cpu`/`libc` that make npm skip it on other machines.
 * There is no `integrity` (the registry never served the file to hash); npm fetches by
 * version where the platform matches. Run after changing dependencies:
 *   npm install && node scripts/complete-lockfile.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  optionalDependencies?: Record<string, string>;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

const OS = [
  'aix',
  'android',
  'darwin',
  'freebsd',
  'linux',
  'netbsd',
  'openbsd',
  'openharmony',
  'sunos',
  'win32',
];
const CPU: Record<string, string> = {
  arm64: 'arm64',
  x64: 'x64',
  ia32: 'ia32',
  arm: 'arm',
  ppc64: 'ppc64',
  s390x: 's390x',
  loong64: 'loong64',
  mips64el: 'mips64el',
  riscv64: 'riscv64',
  wasm32: 'wasm32',
};

/** `@rollup/rollup-linux-arm64-musl` -> { os: linux, cpu: arm64, libc: musl }. */
function platformOf(name: string): Pick<LockEntry, 'os' | 'cpu' | 'libc'> | undefined {
  const parts = (name.split('/').pop() ?? '').split('-');
  const os = parts.find((part) => OS.includes(part));
  const cpu = parts.map((part) => CPU[part]).find((value) => value !== undefined);
  if (!os || !cpu) return undefined;
  const platform: Pick<LockEntry, 'os' | 'cpu' | 'libc'> = { os: [os], cpu: [cpu] };
  if (os === 'linux') platform.libc = [parts.includes('musl') ? 'musl' : 'glibc'];
  return platform;
}

const path = process.argv[2] ?? 'package-lock.json';
const lock = JSON.parse(readFileSync(path, 'utf8')) as { packages: Record<string, LockEntry> };
const added: string[] = [];
for (const [location, entry] of Object.entries(lock.packages)) {
  for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${location ? `${location}/` : ''}node_modules/${name}`;
    const hoisted = lock.packages[`node_modules/${name}`];
    if (lock.packages[nested] || hoisted?.version === spec) continue;
    const platform = platformOf(name);
    if (!platform || !/^\d+\.\d+\.\d+/.test(spec)) continue;
    // A hoisted copy of another version serves another dependant: this one goes beside its own.
    lock.packages[hoisted ? nested : `node_modules/${name}`] = {
      version: spec,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...platform,
    };
    added.push(`${name}@${spec}`);
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(
  added.length === 0 ? 'lock file complete' : `added ${added.length}: ${added.join(', ')}`,
);
