import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/**
 * A process started by one that runs the local runtime inherits AWS_LAMBDA_MAX_CONCURRENCY
 * (the runtime sets it for its own invocations) but has no InvokeStore: the CLI and the agent
 * must still start. A real process, since the variable is read when the module loads.
 */
describe('lib/observability.ts outside Lambda', () => {
  it('loads and logs with an inherited AWS_LAMBDA_MAX_CONCURRENCY and no InvokeStore', () => {
    const result = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const { logger, metrics } = await import('./lib/observability.ts'); logger.warn('still here'); metrics.addMetric('Probe', 'Count', 1);",
      ],
      {
        cwd: process.cwd(),
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          AWS_LAMBDA_MAX_CONCURRENCY: '1000',
          POWERTOOLS_METRICS_DISABLED: 'true',
        },
      },
    );
    expect(result.stderr).not.toContain('InvokeStore is not available');
    expect(result.status).toBe(0);
    // Powertools writes warnings to stderr.
    expect(result.stderr).toContain('still here');
  });
});
