import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { OWN_PROCESS_MARKER, ownProcessReason, sharedProcessFiles } from '../shared-process.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** test/shared-process.ts: which files may share a fork with others (no isolation). */
describe('files that share forks', () => {
  it('keeps a process of its own for a file that changes process-wide state, naming what', () => {
    expect(ownProcessReason("vi.mock('../../lib/x.ts', () => ({}));")).toBe(
      'mocks a module or hoists setup',
    );
    expect(ownProcessReason("vi.hoisted(() => { process.env.X ??= '1'; });")).toBe(
      'mocks a module or hoists setup',
    );
    expect(ownProcessReason("vi.stubEnv('AWS_REGION', 'eu-west-1');")).toBe(
      'stubs the environment or a global',
    );
    expect(ownProcessReason('vi.useFakeTimers();')).toBe('fakes the timers');
    expect(ownProcessReason("process.env.AWS_REGION = 'x';")).toBe('writes process.env');
    expect(ownProcessReason("process.env['A'] ??= 'x';")).toBe('writes process.env');
    expect(ownProcessReason('delete process.env.AWS_REGION;')).toBe('writes process.env');
    expect(ownProcessReason("process.chdir('/tmp');")).toBe(
      'changes the working directory or umask',
    );
    expect(ownProcessReason("process.once('SIGTERM', stop);")).toBe('listens on the process');
    expect(ownProcessReason('const { heapUsed } = process.memoryUsage();')).toBe(
      "reads the process's heap or CPU",
    );
    expect(ownProcessReason('global.gc?.();')).toBe("reads the process's heap or CPU");
    // A heap walk counts every object the shared fork's earlier files left: 1 s alone, up to
    // 29 s after them in CI (local-store-iterators, which once timed out there).
    expect(ownProcessReason("queryObjects(Kind, { format: 'count' })")).toBe(
      "reads the process's heap or CPU",
    );
    expect(ownProcessReason(`// ${OWN_PROCESS_MARKER}: it patches a prototype`)).toBe(
      `says '${OWN_PROCESS_MARKER}'`,
    );
  });

  it('lets a file share that only reads the environment or compares it', () => {
    expect(ownProcessReason("const region = process.env.AWS_REGION ?? 'eu-west-1';")).toBe(
      undefined,
    );
    expect(ownProcessReason("if (process.env.CI === 'true') skip();")).toBe(undefined);
    expect(ownProcessReason('const env = { ...process.env, X: "1" };')).toBe(undefined);
  });

  it('shares unit, infrastructure, integration and property files, none the scan keeps apart', () => {
    const files = sharedProcessFiles(REPO);
    expect(files.length).toBeGreaterThan(300);
    for (const file of files) {
      expect(file).toMatch(/^test\/(unit|infra|integration|property)\/[^/]+\.test\.ts$/);
      expect(ownProcessReason(readFileSync(join(REPO, file), 'utf8')), file).toBeUndefined();
    }
    // Files known to mock modules or hoist the environment stay apart.
    expect(files).not.toContain('test/unit/secrets-in-logs.test.ts');
    expect(files).not.toContain('test/unit/sweep-timer.test.ts');
    expect(files).toContain('test/infra/functions.test.ts');
    // A heap reading, environment stubs: apart. A runtime over a real socket: shared.
    expect(files).not.toContain('test/integration/lambda-handler-memory.test.ts');
    expect(files).not.toContain('test/integration/handlers.test.ts');
    expect(files).toContain('test/integration/local-runtime.test.ts');
    expect(files).toContain('test/property/lifecycle.property.test.ts');
  });
});
