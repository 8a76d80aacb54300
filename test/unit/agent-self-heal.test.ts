import { describe, expect, it } from 'vitest';
import { failureDelay } from '../../agent/backoff.ts';
import { DEFAULT_TIMING } from '../../agent/config.ts';
import type { Reply, RequestAction } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import type { ProbeResult } from '../../agent/probes/probe-result.ts';
import { type AgentEvent, Supervisor } from '../../agent/supervisor.ts';
import type { Probe } from '../../lib/domain/model.ts';
import { REPLACED_CLOSE_REASON } from '../../lib/protocol/close-reasons.ts';
import { FakeLink } from '../fixtures/agent-fake-link.ts';
import { ManualClock } from '../fixtures/agent-manual-clock.ts';

/**
 * The agent's self-heal: a connection the registrar does not count is replaced, make before
 * break. In-memory links (FakeLink) and a manual clock; the same story against the real local
 * runtime is in test/integration/agent-self-heal.test.ts.
 */
const PROBE: Probe = {
  httpGet: { port: 8080, path: '/healthz' },
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 1,
};

const NOT_REGISTERED: Reply = {
  ok: false,
  error: { code: 'NotRegistered', message: 'this connection holds no WorkloadEntry' },
};

type Respond = (action: RequestAction, body: Record<string, unknown>) => Reply | 'drop';

/** `behaviour(n)` decides how the n-th link (0-based) answers; undefined: a healthy registrar. */
function harness(behaviour: (n: number, normal: Respond) => Respond | undefined = () => undefined) {
  const clock = new ManualClock();
  const logger = memoryLogger();
  const links: FakeLink[] = [];
  const opens: number[] = [];
  const events: (AgentEvent & { at: number })[] = [];
  let results: ProbeResult[] = [{ ok: true, message: 'ok' }];
  const supervisor = new Supervisor({
    clock,
    logger,
    timing: { ...DEFAULT_TIMING, ackTimeoutMs: 10_000 },
    open: async () => {
      opens.push(clock.now());
      const link = new FakeLink(clock, PROBE);
      const respond = behaviour(links.length, link.respond);
      if (respond) link.respond = respond;
      links.push(link);
      return link;
    },
    createCheck: () => async () =>
      results.length > 1 ? (results.shift() as ProbeResult) : (results[0] as ProbeResult),
    onEvent: (event) => events.push(event),
  });
  return {
    clock,
    supervisor,
    links,
    opens,
    events,
    logs: logger.lines,
    setResults: (next: ProbeResult[]) => {
      results = next;
    },
  };
}

const acked = (h: ReturnType<typeof harness>) => h.events.filter((e) => e.type === 'health-acked');

describe('agent self-heal', () => {
  it('replaces a connection whose describe is answered NotRegistered, closing it only after the new one is open', async () => {
    const h = harness((n, normal) =>
      n === 0
        ? (action, body) => (action === 'describe' ? NOT_REGISTERED : normal(action, body))
        : undefined,
    );
    h.supervisor.start();
    await h.clock.advance(0);

    // Replaced at once: both opened at the start time.
    expect(h.opens).toEqual([h.opens[0], h.opens[0]]);
    const [stale, fresh] = h.links as [FakeLink, FakeLink];
    expect(stale.closedBy).toBe('agent');
    expect(stale.closeReason).toBe(REPLACED_CLOSE_REASON);
    expect(fresh.closed).toBe(false);
    expect(h.supervisor.entryName).toBe('ns/web-10-0-0-1');
    expect(h.logs.some((line) => line.includes('holds no entry'))).toBe(true);
  });

  it('replaces a connection whose health report is answered NotRegistered, and the report lands on the new one', async () => {
    const h = harness((n, normal) =>
      n === 0
        ? (action, body) => (action === 'health' ? NOT_REGISTERED : normal(action, body))
        : undefined,
    );
    h.supervisor.start();
    await h.clock.advance(1_000);

    const [stale, fresh] = h.links as [FakeLink, FakeLink];
    expect(stale.health()).toEqual([true]);
    expect(stale.closedBy).toBe('agent');
    expect(fresh.health()).toEqual([true]);
    expect(acked(h)).toHaveLength(1);
    // Nothing more is sent on the connection the registrar does not count.
    await h.clock.advance(60_000);
    expect(stale.health()).toEqual([true]);
  });

  it('replaces a connection after two health reports in a row go unacknowledged', async () => {
    const h = harness((n, normal) =>
      n === 0 ? (action, body) => (action === 'health' ? 'drop' : normal(action, body)) : undefined,
    );
    h.supervisor.start();
    await h.clock.advance(1_000);
    expect(h.links).toHaveLength(1);

    await h.clock.advance(10_000); // the first report times out: sent again, still one connection
    expect(h.links).toHaveLength(1);
    expect((h.links[0] as FakeLink).health()).toEqual([true, true]);

    await h.clock.advance(10_000); // the second times out: a new connection
    expect(h.links).toHaveLength(2);
    expect((h.links[0] as FakeLink).closedBy).toBe('agent');
    expect((h.links[1] as FakeLink).health()).toEqual([true]);
    expect(acked(h)).toHaveLength(1);
  });

  it('keeps a connection whose one unacknowledged report is followed by an ack', async () => {
    let dropped = 0;
    const h = harness(
      (_n, normal) => (action, body) =>
        action === 'health' && dropped++ === 0 ? 'drop' : normal(action, body),
    );
    h.supervisor.start();
    await h.clock.advance(1_000);
    await h.clock.advance(10_000);
    expect(acked(h)).toHaveLength(1);

    // Another unacknowledged report later starts a new count: one is not enough.
    dropped = 0;
    h.setResults([{ ok: false, message: 'HTTP 503' }]);
    await h.clock.advance(10_000);
    await h.clock.advance(10_000);
    expect(h.links).toHaveLength(1);
    expect(acked(h)).toHaveLength(2);
  });

  it('backs off when every new connection holds nothing, instead of reconnecting in a loop', async () => {
    const h = harness(
      (_n, normal) => (action, body) =>
        action === 'describe' ? NOT_REGISTERED : normal(action, body),
    );
    h.clock.randoms.push(...Array(50).fill(1));
    h.supervisor.start();
    await h.clock.advance(0);
    // The first replacement is immediate, then each waits the failure backoff (full jitter
    // drawn at its maximum here): 0, 2 s, 4 s, 8 s, ...
    await h.clock.advance(10 * 60_000);
    const gaps = h.opens.slice(1).map((at, i) => at - (h.opens[i] as number));
    expect(gaps[0]).toBe(0);
    for (let i = 1; i < 5; i += 1) expect(gaps[i]).toBe(failureDelay(i, DEFAULT_TIMING, 1));
    // Capped at 60 s: over 10 minutes, a bounded number of attempts.
    expect(h.opens.length).toBeLessThan(20);
    // Each replacement closed the one before it only once it was open: one open at a time.
    expect(h.links.filter((link) => !link.closed)).toHaveLength(1);
  });

  it('starts the backoff again once a replacement is proven to hold the entry', async () => {
    let refuseDescribe = 2;
    const h = harness(
      (_n, normal) => (action, body) =>
        action === 'describe' && refuseDescribe-- > 0 ? NOT_REGISTERED : normal(action, body),
    );
    h.clock.randoms.push(...Array(50).fill(1));
    h.supervisor.start();
    await h.clock.advance(60_000);
    expect(h.links).toHaveLength(3);
    expect(h.supervisor.entryName).toBe('ns/web-10-0-0-1');

    // Told again much later (say the entry was deleted): replaced at once, not after a backoff.
    const current = h.links[2] as FakeLink;
    const normal = current.respond;
    current.respond = (action, body) =>
      action === 'health' ? NOT_REGISTERED : normal(action, body);
    h.setResults([{ ok: false, message: 'HTTP 503' }]);
    const before = h.clock.now();
    await h.clock.advance(10_000);
    expect(h.links).toHaveLength(4);
    expect(h.opens.at(-1)).toBeLessThanOrEqual(before + 10_000);
    expect((h.links[3] as FakeLink).health()).toEqual([false]);
  });
});
