import { describe, expect, it } from 'vitest';
import { type AgentTiming, DEFAULT_TIMING, loadAgentConfig } from '../../agent/config.ts';
import type { AgentLink, Reply, RequestAction } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import type { ProbeResult } from '../../agent/probes/probe-result.ts';
import { type AgentEvent, Supervisor } from '../../agent/supervisor.ts';
import type { Probe } from '../../lib/domain/model.ts';
import { FakeLink } from '../fixtures/agent-fake-link.ts';
import { ManualClock } from '../fixtures/agent-manual-clock.ts';

/**
 * Graceful drain on SIGTERM/SIGINT (`drainAndStop`): in-memory links (FakeLink) and a manual
 * clock, so every wait is exact; the same story against the real local runtime, timed, is in
 * test/integration/agent-drain.test.ts.
 */
const PROBE: Probe = {
  httpGet: { port: 8080, path: '/healthz' },
  periodSeconds: 1,
  successThreshold: 1,
  failureThreshold: 1,
};
const DELAY = 10_000;
const ACK = 3_000;

type Respond = (action: RequestAction, body: Record<string, unknown>) => Reply | 'drop';

function harness(
  options: {
    timing?: Partial<AgentTiming>;
    /** How the n-th link (0-based) answers; undefined: the default registrar. */
    respond?: (n: number, normal: Respond) => Respond | undefined;
    /** Outcome of each open() in turn; default: a link. */
    outcomes?: (() => 'link' | Error | Promise<AgentLink>)[];
  } = {},
) {
  const clock = new ManualClock();
  const logger = memoryLogger();
  const links: FakeLink[] = [];
  const opens: number[] = [];
  const events: (AgentEvent & { at: number })[] = [];
  const h = {
    clock,
    links,
    opens,
    events,
    logs: logger.lines,
    results: [{ ok: true, message: 'ok' }] as ProbeResult[],
    supervisor: undefined as unknown as Supervisor,
    newLink: () => {
      const link = new FakeLink(clock, PROBE, ACK);
      const respond = options.respond?.(links.length, link.respond);
      if (respond) link.respond = respond;
      links.push(link);
      return link;
    },
  };
  const outcomes = options.outcomes ?? [];
  h.supervisor = new Supervisor({
    clock,
    logger,
    timing: { ...DEFAULT_TIMING, ackTimeoutMs: ACK, drainDelayMs: DELAY, ...options.timing },
    open: async () => {
      opens.push(clock.now());
      const outcome = (outcomes.shift() ?? (() => 'link' as const))();
      if (outcome instanceof Error) throw outcome;
      if (outcome instanceof Promise) return outcome;
      return h.newLink();
    },
    createCheck: () => async () =>
      h.results.length > 1 ? (h.results.shift() as ProbeResult) : (h.results[0] as ProbeResult),
    onEvent: (event) => events.push(event),
  });
  return h;
}

type Harness = ReturnType<typeof harness>;

/** Starts, registers and reports healthy once; returns the connection. */
async function running(h: Harness): Promise<FakeLink> {
  h.supervisor.start();
  await h.clock.advance(1_000);
  const link = h.links[0] as FakeLink;
  expect(link.health()).toEqual([true]);
  return link;
}

const actions = (link: FakeLink) => link.sent.map((s) => s.action);
// The supervisor numbers the connections it adopts from 1, in the order they open.
const closedAt = (h: Harness, link: FakeLink) =>
  h.events.find((e) => e.type === 'closed' && e.linkId === h.links.indexOf(link) + 1)?.at;

describe('agent drain', () => {
  it('sends drain on its connection, keeps it open for the drain delay, then closes with 1000', async () => {
    const h = harness();
    const link = await running(h);
    const start = h.clock.now();

    let done = false;
    void h.supervisor.drainAndStop().then(() => {
      done = true;
    });
    await h.clock.advance(0);
    expect(actions(link).at(-1)).toBe('drain');
    expect(h.events.some((e) => e.type === 'drain-acked')).toBe(true);

    await h.clock.advance(DELAY - 1);
    expect(link.closed).toBe(false);
    expect(done).toBe(false);

    await h.clock.advance(1);
    expect(link.closedBy).toBe('agent');
    expect(done).toBe(true);
    expect(closedAt(h, link)).toBe(start + DELAY);
    expect(h.logs.join('\n')).toContain('the registrar marked the entry not healthy (Draining)');
  });

  it('reports no health, rotates nothing and opens nothing while draining', async () => {
    // Rotation would fall inside the drain delay: 75 % of 12 s = 9 s after connecting.
    const h = harness({ timing: { maxConnectionAgeMs: 12_000 } });
    h.clock.randoms.push(0);
    const link = await running(h);
    void h.supervisor.drainAndStop();
    await h.clock.advance(0);
    const sentBefore = link.sent.length;
    h.results = [{ ok: false, message: 'HTTP probe failed with status code 503' }];

    await h.clock.advance(DELAY);

    expect(h.opens).toHaveLength(1);
    expect(link.sent.slice(sentBefore).filter((s) => s.action === 'health')).toEqual([]);
    expect(link.closed).toBe(true);
  });

  it('exits at once when told to stop during the delay (a second signal), still closing with 1000', async () => {
    const h = harness();
    const link = await running(h);
    const drained = h.supervisor.drainAndStop();
    await h.clock.advance(2_000);
    expect(link.closed).toBe(false);

    await h.supervisor.stop();
    await drained;

    expect(link.closedBy).toBe('agent');
    expect(h.clock.pending()).toEqual([]);
  });

  it('tolerates a registrar that does not know drain (UnknownAction) and still waits the delay', async () => {
    const h = harness({
      respond: (_n, normal) => (action, body) =>
        action === 'drain'
          ? { ok: false, error: { code: 'UnknownAction', message: "unknown action 'drain'" } }
          : normal(action, body),
    });
    const link = await running(h);
    const start = h.clock.now();
    void h.supervisor.drainAndStop();
    await h.clock.advance(DELAY - 1);
    expect(link.closed).toBe(false);
    await h.clock.advance(1);

    expect(link.closed).toBe(true);
    expect(closedAt(h, link)).toBe(start + DELAY);
    expect(h.events.find((e) => e.type === 'drain-unacknowledged')).toMatchObject({
      reason: 'the registrar does not know drain (an older version)',
    });
    expect(h.logs.join('\n')).toContain('does not know drain');
  });

  it('waits the ack timeout for a registrar that does not answer, logs it, then the delay', async () => {
    const h = harness({
      respond: (_n, normal) => (action, body) =>
        action === 'drain' ? 'drop' : normal(action, body),
    });
    const link = await running(h);
    const start = h.clock.now();
    void h.supervisor.drainAndStop();
    await h.clock.advance(ACK + DELAY);

    expect(link.closed).toBe(true);
    expect(closedAt(h, link)).toBe(start + ACK + DELAY);
    expect(h.logs.join('\n')).toContain('did not answer the drain within 3.0 s');
  });

  it('does not reconnect when the connection is lost while draining, and stops at once', async () => {
    const h = harness();
    const link = await running(h);
    let done = false;
    void h.supervisor.drainAndStop().then(() => {
      done = true;
    });
    await h.clock.advance(2_000);

    link.serverClose(1006);
    await h.clock.advance(0);

    expect(done).toBe(true);
    await h.clock.advance(120_000);
    expect(h.opens).toHaveLength(1);
    expect(h.logs.join('\n')).toContain('closed while draining (1006); not reconnecting');
  });

  it('sends no drain and closes at once with a drain delay of 0', async () => {
    const h = harness({ timing: { drainDelayMs: 0 } });
    const link = await running(h);
    await h.supervisor.drainAndStop();
    expect(actions(link)).not.toContain('drain');
    expect(link.closedBy).toBe('agent');
  });

  it('stops at once without retrying when it is not connected (backing off after a failure)', async () => {
    const failure = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const h = harness({ outcomes: [() => failure] });
    h.supervisor.start();
    await h.clock.advance(0);
    expect(h.opens).toHaveLength(1);

    await h.supervisor.drainAndStop();
    await h.clock.advance(120_000);

    expect(h.opens).toHaveLength(1);
    expect(h.links).toEqual([]);
  });

  it('drains on the new connection when a rotation is under way, after it registered', async () => {
    let resolveSecond: (link: AgentLink) => void = () => {};
    const second = new Promise<AgentLink>((resolve) => {
      resolveSecond = resolve;
    });
    const h = harness({
      timing: { maxConnectionAgeMs: 100_000 },
      outcomes: [() => 'link', () => second],
    });
    h.clock.randoms.push(0);
    const first = await running(h);
    await h.clock.advance(75_000);
    expect(h.opens).toHaveLength(2);

    void h.supervisor.drainAndStop();
    await h.clock.advance(0);
    expect(actions(first)).not.toContain('drain');

    const replacement = h.newLink();
    resolveSecond(replacement);
    await h.clock.advance(0);

    expect(first.closed).toBe(true);
    expect(actions(replacement)).toContain('drain');
    expect(actions(replacement)).not.toContain('describe');
    await h.clock.advance(DELAY);
    expect(replacement.closedBy).toBe('agent');
  });
});

describe('drain delay setting', () => {
  const base = ['--url', 'ws://127.0.0.1:1', '--group', 'web', '--namespace', 'shop'];
  const env = { REGISTRAR_AGENT_TOKEN: 'x', REGISTRAR_AGENT_IP: '10.0.0.5' };
  const delay = (argv: string[], more: Record<string, string> = {}) => {
    const config = loadAgentConfig([...base, ...argv], { ...env, ...more });
    if (typeof config === 'string') throw new Error(config);
    return config.timing.drainDelayMs;
  };

  it('defaults to 10 s, reads --drain-delay and REGISTRAR_AGENT_DRAIN_DELAY, and takes 0', () => {
    expect(delay([])).toBe(10_000);
    expect(delay(['--drain-delay', '30s'])).toBe(30_000);
    expect(delay([], { REGISTRAR_AGENT_DRAIN_DELAY: '2s' })).toBe(2_000);
    expect(delay(['--drain-delay', '0'])).toBe(0);
    expect(delay(['--drain-delay', '0s'])).toBe(0);
  });

  it('refuses a delay that is not a duration or is over 10 minutes', () => {
    expect(() => delay(['--drain-delay', 'soon'])).toThrow(
      "timing.drainDelay (from --drain-delay): must be a duration from 0 (no drain) to 10m, such as 10s, got 'soon'",
    );
    expect(() => delay(['--drain-delay', '11m'])).toThrow(/must be a duration from 0/);
  });
});
