import { describe, expect, it } from 'vitest';
import { OptionsError, parseLocalOptions } from '../../infra/local/options.ts';
import type { OverviewResponse } from '../../lib/dashboard-server/api-types.ts';
import { startRuntimeProcess } from '../fixtures/local-runtime-process.ts';

/** `npm start --dashboard`: the local runtime serves the same read-only view itself. */
describe('npm start --dashboard', () => {
  it('prints the dashboard in its banner, serves it, and stops it with the runtime on Ctrl-C', async () => {
    const runtime = await startRuntimeProcess(['--memory', '--dashboard-port', '0']);
    try {
      const match =
        /^ {2}dashboard: {8}(http:\/\/127\.0\.0\.1:\d+\/) \(read-only; as registrar dashboard\)$/m.exec(
          runtime.stdout(),
        );
      expect(match, runtime.stdout()).not.toBeNull();
      const url = match?.[1] as string;
      const response = await fetch(`${url}api/overview`);
      expect(response.status).toBe(200);
      const overview = (await response.json()) as OverviewResponse;
      expect(overview.target).toMatch(
        /^table 'workload-registrar' at http:\/\/127\.0\.0\.1:\d+ \(this runtime's\)$/,
      );
      expect(overview.refusals.source).toBe('the local runtime');
      expect(await runtime.stop()).toBe(0);
      await expect(fetch(`${url}api/overview`)).rejects.toThrow();
    } finally {
      await runtime.stop();
    }
  }, 60_000);

  it('is off unless asked for, on the default port when asked, and refuses a bad port', () => {
    const parse = (args: string[], env: Record<string, string> = {}) => {
      const parsed = parseLocalOptions(args, env);
      return parsed.kind === 'run' ? parsed.options.dashboardPort : 'help';
    };
    expect(parse([])).toBeUndefined();
    // The variable sets the port; it does not turn the dashboard on by itself.
    expect(parse([], { REGISTRAR_DASHBOARD_PORT: '9000' })).toBeUndefined();
    expect(parse(['--dashboard'])).toBe(8090);
    expect(parse(['--dashboard'], { REGISTRAR_DASHBOARD_PORT: '9000' })).toBe(9000);
    expect(parse(['--dashboard-port', '0'])).toBe(0);
    expect(() => parse(['--dashboard-port', '99999'])).toThrow(OptionsError);
    expect(() => parse(['--dashboard-port', '99999'])).toThrow(
      "invalid --dashboard-port '99999': must be a port number from 0 to 65535",
    );
  });
});
