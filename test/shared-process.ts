import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Which test files may share a fork with others (vitest's `isolate: false`), and which need a
 * process of their own.
 *
 * A fork of its own costs a file its imports every time: aws-cdk-lib alone is about 3 s of CPU
 * an infrastructure file, the SDK, dynalite and the registrar about half a second an
 * integration file (71 small integration files: 112 s of CPU in forks of their own, 78 s in one
 * shared fork; docs/contributing.md, "CI stages"). Sharing is safe for a file that changes no
 * process-wide state, so a file keeps a process of its own when its source does any of what
 * `OWN_PROCESS_REASONS` names (a module mock or a hoisted environment lasts as long as the
 * module cache, which a shared fork keeps; a listener on the process outlives the file; a heap
 * reading weighs what the files before it left), or says so itself with the marker comment
 * `test: own process` (for state the scan cannot see). What a file starts (runtimes, agents,
 * servers, child processes) it stops in its own hooks, shared fork or not: the suite's rule.
 */
export const SHARED_DIRS = [
  'test/unit',
  'test/infra',
  'test/integration',
  'test/property',
] as const;

/** The marker a file puts in a comment to keep a process of its own for a reason of its own. */
export const OWN_PROCESS_MARKER = 'test: own process';

const OWN_PROCESS_REASONS: readonly { pattern: RegExp; reason: string }[] = [
  { pattern: /\bvi\.(mock|doMock|hoisted)\(/, reason: 'mocks a module or hoists setup' },
  { pattern: /\bvi\.(stubEnv|stubGlobal)\(/, reason: 'stubs the environment or a global' },
  { pattern: /\bvi\.useFakeTimers\(/, reason: 'fakes the timers' },
  {
    pattern: /\bprocess\.env(\.\w+|\[[^\]]+\])\s*(=[^=]|\?\?=|\|\|=)|\bdelete process\.env\b/,
    reason: 'writes process.env',
  },
  { pattern: /\bprocess\.(chdir|umask)\(/, reason: 'changes the working directory or umask' },
  {
    pattern: /\bprocess\.(on|once|addListener|prependListener|prependOnceListener)\(/,
    reason: 'listens on the process',
  },
  {
    pattern:
      /\b(heapUsed|getHeapStatistics|memoryUsage|cpuUsage|resourceUsage|queryObjects)\b|\bglobal\.gc\b/,
    reason: "reads the process's heap or CPU",
  },
  { pattern: new RegExp(OWN_PROCESS_MARKER), reason: `says '${OWN_PROCESS_MARKER}'` },
];

/** Why a test file's source needs a process of its own; undefined when it may share one. */
export function ownProcessReason(source: string): string | undefined {
  return OWN_PROCESS_REASONS.find(({ pattern }) => pattern.test(source))?.reason;
}

/** The test files that may share a fork, relative to `repo`, sorted. */
export function sharedProcessFiles(repo: string): string[] {
  return SHARED_DIRS.flatMap((dir) =>
    readdirSync(join(repo, dir))
      .filter((name) => name.endsWith('.test.ts'))
      .map((name) => `${dir}/${name}`)
      .filter((path) => ownProcessReason(readFileSync(join(repo, path), 'utf8')) === undefined),
  ).sort();
}
