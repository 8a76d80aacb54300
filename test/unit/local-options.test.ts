import { describe, expect, it } from 'vitest';
import { OptionsError, parseLocalOptions } from '../../infra/local/options.ts';

/** `npm start` options: flags, their environment variables, and refusals that name the option. */

function run(argv: string[], env: Record<string, string> = {}) {
  const parsed = parseLocalOptions(argv, env);
  if (parsed.kind !== 'run') throw new Error('expected options, got help');
  return parsed.options;
}

function refusal(argv: string[], env: Record<string, string> = {}): string {
  try {
    parseLocalOptions(argv, env);
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return (error as Error).message;
  }
  throw new Error('expected the options to be refused');
}

describe('npm start options', () => {
  it('passes the heartbeat lanes to the functions, and refuses a count outside 1-16 naming the flag', () => {
    expect(run(['--heartbeat-lanes', '4']).functionEnv).toMatchObject({
      REGISTRAR_HEARTBEAT_LANES: '4',
    });
    expect(run([], { REGISTRAR_HEARTBEAT_LANES: '2' }).functionEnv).toMatchObject({
      REGISTRAR_HEARTBEAT_LANES: '2',
    });
    expect(refusal(['--heartbeat-lanes', '0'])).toBe(
      "invalid --heartbeat-lanes '0': must be a whole number from 1 to 16, got '0'",
    );
    expect(refusal([], { REGISTRAR_HEARTBEAT_LANES: '17' })).toBe(
      "invalid REGISTRAR_HEARTBEAT_LANES '17': must be a whole number from 1 to 16, got '17'",
    );
  });

  it('passes the fail-static settings to the functions, from flags or their variables', () => {
    expect(
      run(['--hold-bound', '2h', '--disruption-threshold', '60%', '--ec2-states', 'terminated'], {
        REGISTRAR_DISRUPTION_WINDOW: '10m',
      }).functionEnv,
    ).toEqual({
      REGISTRAR_SWEEP_HOLD_BOUND: '2h',
      REGISTRAR_DISRUPTION_THRESHOLD: '60%',
      REGISTRAR_EC2_STATES: 'terminated',
      REGISTRAR_DISRUPTION_WINDOW: '10m',
    });
  });

  it('refuses a bad fail-static setting naming the flag or variable and the value', () => {
    expect(refusal(['--disruption-threshold', '1.5'])).toBe(
      "invalid --disruption-threshold '1.5': must be a share between 0 and 1 (exclusive) such as 55% or 0.55, got '1.5'",
    );
    expect(refusal(['--secondary-deletes-per-second', '0'])).toContain(
      "--secondary-deletes-per-second '0'",
    );
    expect(refusal([], { REGISTRAR_SWEEP_HOLD_BOUND: 'soon' })).toContain(
      "REGISTRAR_SWEEP_HOLD_BOUND 'soon'",
    );
    expect(refusal(['--ec2-states', 'exploded'])).toContain("--ec2-states 'exploded'");
  });

  it('reads the liveness interval and the connect settle time from flags and variables', () => {
    expect(
      run(['--liveness-interval', '2s', '--max-connection-age', '60s', '--connect-settle', '1s']),
    ).toMatchObject({
      livenessIntervalMs: 2_000,
      connectSettleMs: 1_000,
    });
    expect(
      run([], { REGISTRAR_LIVENESS_INTERVAL: '1m', REGISTRAR_CONNECT_SETTLE: '5s' }),
    ).toMatchObject({ livenessIntervalMs: 60_000, connectSettleMs: 5_000 });
    expect(refusal(['--connect-settle', '0s'])).toContain('--connect-settle');
  });

  it('refuses a liveness interval too short for the maximum connection age, naming both flags', () => {
    expect(refusal(['--liveness-interval', '1s', '--sweep-interval', '500ms'])).toBe(
      "invalid --liveness-interval '1s': must be at least 30s with a maximum connection age of 2h (the default): each sweep reads the sweep index once per interval of the 3h stale window, at most 360 times; use a longer interval or a shorter --max-connection-age",
    );
    expect(refusal(['--liveness-interval', '1s', '--max-connection-age', '10m'])).toContain(
      'must be at least 3s with a maximum connection age of 10m (--max-connection-age)',
    );
    // The shortest interval for an age starts: 1.5 x 2 h / 360 = 30 s.
    expect(run(['--liveness-interval', '30s'])).toMatchObject({ livenessIntervalMs: 30_000 });
  });

  it('defaults to port 8080 and the runtime defaults for everything else', () => {
    expect(run([])).toEqual({ port: 8080 });
  });

  it('reads durations, the data dir and --memory from flags', () => {
    const options = run([
      '--port',
      '0',
      '--grace-period',
      '30s',
      '--max-connection-age',
      '1h30m',
      '--sweep-interval',
      '500ms',
      '--idle-timeout',
      '5m',
      '--data-dir',
      '/tmp/reg',
      '--memory',
    ]);
    expect(options).toEqual({
      port: 0,
      gracePeriodMs: 30_000,
      maxConnectionAgeMs: 5_400_000,
      sweepIntervalMs: 500,
      idleTimeoutMs: 300_000,
      dataDir: '/tmp/reg',
      memory: true,
    });
  });

  it('reads the environment variables when no flag is given', () => {
    const options = run([], {
      REGISTRAR_PORT: '9090',
      REGISTRAR_GRACE_PERIOD: '1m',
      REGISTRAR_MAX_CONNECTION_AGE: '2h',
      REGISTRAR_SWEEP_INTERVAL: '10s',
      REGISTRAR_IDLE_TIMEOUT: '20s',
      REGISTRAR_DATA_DIR: 'state',
    });
    expect(options).toEqual({
      port: 9090,
      gracePeriodMs: 60_000,
      maxConnectionAgeMs: 7_200_000,
      sweepIntervalMs: 10_000,
      idleTimeoutMs: 20_000,
      dataDir: 'state',
    });
  });

  it('lets a flag win over its environment variable', () => {
    expect(run(['--port', '7000'], { REGISTRAR_PORT: '9090' }).port).toBe(7000);
  });

  it('returns the usage for --help', () => {
    const parsed = parseLocalOptions(['--help'], {});
    expect(parsed.kind).toBe('help');
    expect(parsed.kind === 'help' && parsed.text).toContain('--grace-period');
  });

  it.each([
    [['--port', 'http'], "invalid --port 'http'"],
    [['--port', '70000'], "invalid --port '70000'"],
    [['--port=-1'], "invalid --port '-1'"],
    [['--grace-period', '0s'], "invalid --grace-period '0s'"],
    [['--grace-period', '5 minutes'], "invalid --grace-period '5 minutes'"],
    [['--max-connection-age=-2h'], "invalid --max-connection-age '-2h'"],
    [['--sweep-interval', '0ms'], "invalid --sweep-interval '0ms'"],
    [['--idle-timeout', '10'], "invalid --idle-timeout '10'"],
    [['--route-throttle', 'fast'], "invalid --route-throttle 'fast': must be <rate>[/<burst>]"],
    [['--route-throttle', '0/10'], "invalid --route-throttle '0/10'"],
    [['--route-throttle', '10/0'], "invalid --route-throttle '10/0'"],
    [['--route-throttle', '1.5'], "invalid --route-throttle '1.5'"],
    [
      ['--function-concurrency', '0'],
      "invalid --function-concurrency '0': must be a whole number of at least 1",
    ],
    [['--function-concurrency', '2.5'], "invalid --function-concurrency '2.5'"],
    [['--function-concurrency', 'many'], "invalid --function-concurrency 'many'"],
    [
      ['--projection-targets', 'envoy'],
      "invalid --projection-targets 'envoy': invalid projection targets 'envoy'",
    ],
  ])('refuses %j naming the option and the value', (argv, message) => {
    expect(refusal(argv)).toContain(message);
  });

  it.each([
    ['REGISTRAR_PORT', 'eighty'],
    ['REGISTRAR_GRACE_PERIOD', '0m'],
    ['REGISTRAR_MAX_CONNECTION_AGE', 'forever'],
    ['REGISTRAR_SWEEP_INTERVAL', '-1m'],
    ['REGISTRAR_IDLE_TIMEOUT', '1y'],
    ['REGISTRAR_ROUTE_THROTTLE', '5/'],
    ['REGISTRAR_FUNCTION_CONCURRENCY', '-4'],
  ])('refuses %s=%s naming the variable and the value', (variable, value) => {
    expect(refusal([], { [variable]: value })).toContain(`invalid ${variable} '${value}'`);
  });

  it("throttles each message route as the stage does: the stack's default, or --route-throttle", () => {
    expect(run([])).not.toHaveProperty('routeThrottle');
    expect(run(['--route-throttle', '20/5']).routeThrottle).toEqual({
      rateLimit: 20,
      burstLimit: 5,
    });
    // The burst defaults to twice the rate, as the stack sizes it.
    expect(run([], { REGISTRAR_ROUTE_THROTTLE: '20' }).routeThrottle).toEqual({
      rateLimit: 20,
      burstLimit: 40,
    });
  });

  it('limits the invocations of each function at once with --function-concurrency', () => {
    // Unset here: the runtime applies LOCAL_DEFAULTS.functionConcurrency.
    expect(run([])).not.toHaveProperty('functionConcurrency');
    expect(run(['--function-concurrency', '8']).functionConcurrency).toBe(8);
    expect(run([], { REGISTRAR_FUNCTION_CONCURRENCY: '1' }).functionConcurrency).toBe(1);
  });

  it('projects with --project, --kubeconfig or --context (REGISTRAR_KUBE_CONTEXT)', () => {
    expect(run(['--project'])).toMatchObject({ project: true });
    expect(run(['--context', 'kind-mesh'])).toMatchObject({ kubeContext: 'kind-mesh' });
    expect(run([], { REGISTRAR_KUBE_CONTEXT: 'prod' })).toMatchObject({ kubeContext: 'prod' });
    expect(run([])).not.toHaveProperty('project');
  });

  it('prints one line per event by default, at LOG_LEVEL info', () => {
    const parsed = parseLocalOptions([], {});
    expect(parsed.kind === 'run' && parsed.console).toEqual({ format: 'human', level: 'INFO' });
  });

  it('takes --log-format (or REGISTRAR_LOG_FORMAT) and LOG_LEVEL', () => {
    const parsed = parseLocalOptions(['--log-format', 'json'], { LOG_LEVEL: 'debug' });
    expect(parsed.kind === 'run' && parsed.console).toEqual({ format: 'json', level: 'DEBUG' });
    const fromEnv = parseLocalOptions([], { REGISTRAR_LOG_FORMAT: 'json', LOG_LEVEL: 'WARN' });
    expect(fromEnv.kind === 'run' && fromEnv.console).toEqual({ format: 'json', level: 'WARN' });
  });

  it('refuses an unknown log format or level, naming it and the value', () => {
    expect(refusal(['--log-format', 'pretty'])).toBe(
      "invalid --log-format 'pretty': must be human or json",
    );
    expect(refusal([], { LOG_LEVEL: 'verbose' })).toBe(
      "invalid LOG_LEVEL 'verbose': must be one of trace, debug, info, warn, error, critical, silent",
    );
  });

  it('refuses an unknown flag and a flag without its value', () => {
    expect(refusal(['--grace', '5m'])).toContain("'--grace'");
    expect(refusal(['--port'])).toContain('--port');
  });
});
