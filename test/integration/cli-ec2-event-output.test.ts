import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeRegistry } from '../../lib/wiring/registry.ts';
import { connectChange } from '../fixtures/connect-change.ts';
import { startTestDynamo, type TestDynamo } from '../fixtures/dynamo.ts';

/**
 * `registrar ec2-event` as an operator runs it (the bin script, its own process): it runs the
 * EC2 state-change function's code, whose EMF metric lines are for CloudWatch; the terminal
 * gets the CLI's own lines only.
 */
const run = promisify(execFile);
let dynamo: TestDynamo;
const INSTANCE = 'i-0123456789abcdef0';

beforeAll(async () => {
  dynamo = await startTestDynamo();
  // The instance's VM is registered: the function removes its entry and logs that it did.
  const store = composeRegistry(dynamo.client, dynamo.tableName);
  const change = connectChange({
    name: 'web-10.0.0.1',
    namespace: 'shop',
    connectionId: 'c1',
    connectedAt: 1,
  });
  change.instanceId = INSTANCE;
  expect(await store.connect(change)).toBe('created');
});
afterAll(async () => {
  await dynamo?.close();
});

describe('registrar ec2-event output', () => {
  it('prints what was removed and the result on stdout, and neither EMF nor JSON log lines', async () => {
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
        INSTANCE,
        '--state',
        'terminated',
      ],
      { env },
    );
    expect(stdout).toBe(
      `workloadentry "shop/web-10.0.0.1" removed\ninstance ${INSTANCE} terminated: 1 removed\n`,
    );
    expect(stderr).toBe('');
  });
});
