import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * `registrar ec2-event` as an operator runs it (the bin script, its own process): it runs the
 * EC2 state-change function's code, whose EMF metric lines are for CloudWatch; the terminal
 * gets the CLI's own lines only.
 */
const run = promisify(execFile);
let dynamo: TestDynamo;
beforeAll(async () => {
  dynamo = await startTestDynamo();
});
afterAll(async () => {
  await dynamo?.close();
});

describe('registrar ec2-event output', () => {
  it('prints what was removed, and no EMF metric lines', async () => {
    const bin = fileURLToPath(new URL('../../bin/registrar.js', import.meta.url));
    const env = { ...process.env };
    delete env.POWERTOOLS_METRICS_DISABLED;
    const { stdout, stderr } = await run(
      process.execPath,
      [
        bin,
        '--endpoint',
        dynamo.endpoint,
        '--table',
        dynamo.tableName,
        'ec2-event',
        '--instance-id',
        'i-0123456789abcdef0',
        '--state',
        'terminated',
      ],
      { env },
    );
    expect(stdout).not.toContain('_aws');
    expect(stderr).not.toContain('_aws');
    expect(stderr).toBe('instance i-0123456789abcdef0 terminated: 0 removed\n');
  });
});
