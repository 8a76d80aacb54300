import { describe, expect, it } from 'vitest';
import { failureDelay } from '../../agent/backoff.ts';
import { type AgentTiming, DEFAULT_TIMING } from '../../agent/config.ts';
import { type AgentLink, RefusedError } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import type { ProbeResult } from '../../agent/probes/probe-result.ts';
import { type AgentEvent, Supervisor } from '../../agent/supervisor.ts';
import type { Probe } from '../../lib/domain/model.ts';
import { REPLACED_CLOSE_REASON } from '../../lib/protocol/close-reasons.ts';
import { FakeLink } from '../fixtures/agent-fake-link.ts';
import { ManualClock } from '../fixtures/agent-manual-clock.ts';

const HTTP_PROBE: Probe = {
  httpGet: { port: 8080, path: '/healthz' },
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 1,
};

interface Harness {
  clock: ManualClock;
  supervisor: Supervisor;
  links: FakeLink[];
  opens: number[];
  events: (AgentEvent & { at: number })[];
  logs: string[];
  /** Probe results, consumed one per probe period; the last one repeats. */
  results: ProbeResult[];
}

function harness(
  options: {
    probe?: Probe | null;
    timing?: Partial<AgentTiming>;
    /** Outcome of each open() in turn: 'link', an error, or a promise the test resolves. */
    outcomes?: (() => 'link' | Error | Promise<AgentLink>)[];
    onLink?: (link: FakeLink) => void;
    refusalHint?: (status: number, reasonGiven: boolean) => string | undefined;
  } = {},
): Harness {
  const clock = new ManualClock();
  const logger = memoryLogger();
  const h: Harness = {
    clock,
    links: [],
    opens: [],
    events: [],
    logs: logger.lines,
    results: [{ ok: true, message: 'ok' }],
    supervisor: undefined as never,
  };
  const outcomes = options.outcomes ?? [];
  h.supervisor = new Supervisor({
    clock,
    logger,
    timing: { ...DEFAULT_TIMING, ...options.timing },
    open: async () => {
      h.opens.push(clock.now());
      const outcome = (outcomes.shift() ?? (() => 'link' as const))();
      if (outcome instanceof Error) throw outcome;
      if (outcome instanceof Promise) return outcome;
      const link = new FakeLink(clock, options.probe === undefined ? HTTP_PROBE : options.probe);
      options.onLink?.(link);
      h.links.push(link);
      return link;
    },
    createCheck: () => async () =>
      h.results.length > 1 ? (h.results.shift() as ProbeResult) : (h.results[0] as ProbeResult),
    onEvent: (event) => h.events.push(event),
    ...(options.refusalHint ? { refusalHint: options.refusalHint } : {}),
  });
  return h;
}

const refused = (status: number) =>
  new RefusedError(
    status,
    'Unauthenticated',
    'unknown join token; create one with registrar token create',
  );
const network = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });

describe('agent supervisor', () => {
  it('opens the replacement before the maximum age and closes the old connection only after it is registered', async () => {
    let resolveSecond: (link: AgentLink) => void = () => {};
    const second = new Promise<AgentLink>((resolve) => {
      resolveSecond = resolve;
    });
    const h = harness({
      timing: { maxConnectionAgeMs: 100_000 },
      outcomes: [() => 'link', () => second],
    });
    h.clock.randoms.push(0); // rotation at 75 % of the maximum age
    h.supervisor.start();
    await h.clock.advance(0);
    const first = h.links[0] as FakeLink;

    await h.clock.advance(75_000);
    expect(h.opens).toHaveLength(2);
    expect(first.closed).toBe(false);

    const replacement = new FakeLink(h.clock, HTTP_PROBE);
    resolveSecond(replacement);
    await h.clock.advance(0);
    expect(first.closedBy).toBe('agent');
    expect(replacement.closed).toBe(false);
  });

  it('tells the registrar the old connection was replaced when it closes it after a rotation', async () => {
    const h = harness({ timing: { maxConnectionAgeMs: 100_000 } });
    h.clock.randoms.push(0);
    h.supervisor.start();
    await h.clock.advance(0);
    const first = h.links[0] as FakeLink;

    await h.clock.advance(75_000);

    expect(first.closeReason).toBe(REPLACED_CLOSE_REASON);
  });

  it('rotates again on every new connection, each before the maximum age', async () => {
    const h = harness({ timing: { maxConnectionAgeMs: 100_000 } });
    h.clock.fallbackRandom = 0.99;
    h.supervisor.start();
    await h.clock.advance(400_000);
    expect(h.links.length).toBeGreaterThanOrEqual(4);
    for (const [i, at] of h.opens.slice(1).entries())
      expect(at - (h.opens[i] as number)).toBeLessThan(100_000);
    expect(h.links.slice(0, -1).every((link) => link.closedBy === 'agent')).toBe(true);
  });

  it('waits longer after each failed attempt, with full jitter up to 60 s', async () => {
    const h = harness({ outcomes: Array.from({ length: 12 }, () => network) });
    h.clock.fallbackRandom = 0.99;
    h.supervisor.start();
    await h.clock.advance(10 * 60_000);
    const gaps = h.opens.slice(1).map((at, i) => at - (h.opens[i] as number));
    expect(gaps.slice(0, 8)).toEqual([990, 1980, 3960, 7920, 15840, 31680, 59400, 59400]);
  });

  it('spreads retries over the whole window when the random draw is small', async () => {
    const h = harness({ outcomes: [network, network, network] });
    h.clock.randoms.push(0.1, 0.1, 0.1);
    h.supervisor.start();
    await h.clock.advance(10_000);
    const gaps = h.opens.slice(1).map((at, i) => at - (h.opens[i] as number));
    expect(gaps.slice(0, 3)).toEqual([1, 2, 3].map((n) => failureDelay(n, DEFAULT_TIMING, 0.1)));
  });

  it('logs the reason of a refusal and waits at least half the refusal backoff', async () => {
    const h = harness({ outcomes: [() => refused(401), () => refused(401)] });
    h.clock.fallbackRandom = 0;
    h.supervisor.start();
    await h.clock.advance(0);
    expect(
      h.logs.some((line) => line.includes('refused (401 Unauthenticated): unknown join token')),
    ).toBe(true);
    await h.clock.advance(14_999);
    expect(h.opens).toHaveLength(1);
    await h.clock.advance(60_000);
    const retries = h.events.filter((e) => e.type === 'retry-scheduled');
    expect(retries.map((e) => (e as { delayMs: number }).delayMs)).toEqual([15_000, 30_000]);
  });

  it('keeps retrying a missing group (404) every 10-20 s, and registers once it is back', async () => {
    const missing = () => new RefusedError(404, 'NotFound', 'cannot find WorkloadGroup ns/web');
    const h = harness({ outcomes: [missing, missing, missing, missing, missing, missing] });
    h.clock.fallbackRandom = 0.999999;
    h.supervisor.start();
    await h.clock.advance(10 * 60_000);
    const delays = h.events
      .filter((e) => e.type === 'retry-scheduled')
      .map((e) => (e as { delayMs: number }).delayMs);
    expect(delays).toEqual([3_999, 7_999, 15_999, 19_999, 19_999, 19_999]);
    // The seventh attempt found the group: no restart, and the backoff starts over.
    expect(h.links).toHaveLength(1);
    expect(
      h.logs.filter((line) => line.includes('"msg":"registered as ns/web-10-0-0-1"')),
    ).toHaveLength(1);
  });

  it('says registered on every registration, a re-registration with its cause, with the gateway connection id', async () => {
    const h = harness({
      onLink: (link) => {
        const answer = link.respond;
        link.respond = (action, body) => {
          const reply = answer(action, body);
          return action === 'describe' && reply !== 'drop'
            ? { ...reply, connectionId: `gw-${link.id}=` }
            : reply;
        };
      },
    });
    h.supervisor.start();
    await h.clock.advance(1_000);
    (h.links[0] as FakeLink).serverClose(1000);
    await h.clock.advance(2_000);
    await h.clock.advance(DEFAULT_TIMING.maxConnectionAgeMs);
    const registered = h.logs
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => String(line.msg).includes('registered as'));
    const [first, second, third] = h.links as FakeLink[];
    expect(registered.slice(0, 3)).toEqual([
      expect.objectContaining({
        msg: 'registered as ns/web-10-0-0-1',
        connection: 1,
        connectionId: `gw-${first?.id}=`,
      }),
      expect.objectContaining({
        msg: 're-registered as ns/web-10-0-0-1 after a reconnect',
        connection: 2,
        connectionId: `gw-${second?.id}=`,
      }),
      expect.objectContaining({
        msg: 're-registered as ns/web-10-0-0-1 on a new connection',
        connection: 3,
        connectionId: `gw-${third?.id}=`,
      }),
    ]);
  });

  it("adds its full hint only to API Gateway's bare refusal, not after the registrar's own reason", async () => {
    const h = harness({
      outcomes: [
        () =>
          new RefusedError(
            403,
            'Forbidden',
            "join token has no service account; create a token for service account 'web'",
          ),
        () => new RefusedError(403, undefined, 'Forbidden'),
      ],
      refusalHint: (_status, reasonGiven) => (reasonGiven ? 'WHERE' : 'HINT'),
    });
    h.clock.fallbackRandom = 0;
    h.supervisor.start();
    await h.clock.advance(0);
    await h.clock.advance(60_000);
    const refusals = h.logs.filter((line) => line.includes('refused (403'));
    expect(refusals).toHaveLength(2);
    expect(refusals[0]).toContain("create a token for service account 'web'; WHERE; retrying in");
    expect(refusals[0]).not.toContain('HINT');
    expect(refusals[1]).toContain('refused (403): Forbidden; HINT; retrying in');
  });

  it('retries a server error (503) with the ordinary short backoff', async () => {
    const h = harness({ outcomes: [() => new RefusedError(503, undefined, 'unavailable')] });
    h.clock.fallbackRandom = 0.5;
    h.supervisor.start();
    await h.clock.advance(0);
    const retry = h.events.find((e) => e.type === 'retry-scheduled') as {
      delayMs: number;
      refused: boolean;
    };
    expect(retry).toMatchObject({ delayMs: 500, refused: false });
  });

  it('does not reset the backoff for a connection that dies right after opening', async () => {
    const h = harness({ timing: { stableAfterMs: 60_000 } });
    h.clock.fallbackRandom = 0.99;
    h.supervisor.start();
    for (let i = 0; i < 4; i += 1) {
      await h.clock.advance(0);
      (h.links.at(-1) as FakeLink).serverClose(1006);
      await h.clock.advance(10_000);
    }
    const delays = h.events
      .filter((e) => e.type === 'retry-scheduled')
      .map((e) => (e as { delayMs: number }).delayMs);
    expect(delays).toEqual([990, 1980, 3960, 7920]);
  });

  it('starts the backoff over once the registrar accepts a connection again, even one that then dies young', async () => {
    // An outage of six failed attempts, then the registrar is back and accepts; 10 s later it
    // restarts. The wait after that restart is the first step of the formula, not the seventh.
    const h = harness({
      timing: { stableAfterMs: 60_000 },
      outcomes: Array.from({ length: 6 }, () => network),
    });
    h.clock.fallbackRandom = 0.99;
    h.supervisor.start();
    await h.clock.advance(5 * 60_000);
    expect(h.links).toHaveLength(1);
    await h.clock.advance(10_000);
    (h.links[0] as FakeLink).serverClose(1001);
    await h.clock.advance(0);

    const last = h.events.filter((e) => e.type === 'retry-scheduled').at(-1) as {
      delayMs: number;
    };
    expect(last.delayMs).toBe(990);
  });

  it('starts the backoff over when the registrar answers with a refusal', async () => {
    // Down (three failures), then up but refusing (the group is not applied yet), then down
    // again: the failure after the refusal waits the first step, not the fourth.
    const h = harness({
      outcomes: [network, network, network, () => refused(404), network],
    });
    h.clock.fallbackRandom = 0.99;
    h.supervisor.start();
    await h.clock.advance(5 * 60_000);
    const delays = h.events
      .filter((e) => e.type === 'retry-scheduled')
      .map((e) => (e as { delayMs: number }).delayMs);
    expect(delays.slice(0, 3)).toEqual([990, 1980, 3960]);
    expect(delays[4]).toBe(990);
  });

  it('reports health once per transition', async () => {
    const h = harness();
    h.results = [
      { ok: true, message: 'ok' },
      { ok: true, message: 'ok' },
      { ok: false, message: 'HTTP probe failed with status code 500' },
      { ok: false, message: 'HTTP probe failed with status code 500' },
      { ok: true, message: 'ok' },
    ];
    h.supervisor.start();
    await h.clock.advance(60_000);
    const link = h.links[0] as FakeLink;
    expect(link.health()).toEqual([true, false, true]);
    expect(
      link.sent.find((s) => s.action === 'health' && s.body.healthy === false)?.body.message,
    ).toBe('HTTP probe failed with status code 500');
  });

  it('re-sends the last health state first after reconnecting', async () => {
    const h = harness();
    h.supervisor.start();
    await h.clock.advance(1_000);
    expect((h.links[0] as FakeLink).health()).toEqual([true]);
    (h.links[0] as FakeLink).serverClose(1006);
    await h.clock.advance(2_000);
    const second = h.links[1] as FakeLink;
    expect(second.sent[0]).toMatchObject({ action: 'health', body: { healthy: true } });
  });

  it('sends the health state again when no ack arrives within the ack timeout', async () => {
    let dropped = 0;
    const h = harness({
      timing: { ackTimeoutMs: 10_000 },
      onLink: (link) => {
        const respond = link.respond;
        link.respond = (action, body) =>
          action === 'health' && dropped++ === 0 ? 'drop' : respond(action, body);
      },
    });
    h.supervisor.start();
    await h.clock.advance(1_000);
    const link = h.links[0] as FakeLink;
    expect(link.health()).toEqual([true]);
    await h.clock.advance(10_000);
    expect(link.health()).toEqual([true, true]);
    expect(h.events.filter((e) => e.type === 'health-acked')).toHaveLength(1);
  });

  it('sends no health when the group has no probe', async () => {
    const h = harness({ probe: null });
    h.supervisor.start();
    await h.clock.advance(10 * 60_000);
    expect(h.links.flatMap((link) => link.health())).toEqual([]);
  });

  it('pings every 5 minutes and drops a connection that stops answering', async () => {
    const h = harness({ probe: null });
    h.supervisor.start();
    await h.clock.advance(5 * 60_000);
    const link = h.links[0] as FakeLink;
    expect(link.sent.filter((s) => s.action === 'ping')).toHaveLength(1);
    link.respond = () => 'drop';
    await h.clock.advance(5 * 60_000 + 10_000);
    expect(link.closedBy).toBe('agent');
    await h.clock.advance(2_000);
    expect(h.links).toHaveLength(2);
  });

  it('pings at the interval the registrar names in describe, from then on', async () => {
    const h = harness({
      probe: null,
      onLink: (link) => {
        const base = link.respond;
        link.respond = (action, body) =>
          action === 'describe'
            ? {
                action: 'describe',
                ok: true,
                entry: { metadata: { namespace: 'ns', name: 'web-10-0-0-1' } },
                probe: null,
                heartbeat: { intervalSeconds: 10, misses: 3 },
              }
            : base(action, body);
      },
    });
    const start = h.clock.now();
    h.supervisor.start();
    await h.clock.advance(60_000);
    const link = h.links[0] as FakeLink;
    // Six pings in the first minute, 10 s apart, where the configured 5 min would send none.
    const pings = link.sent.filter((s) => s.action === 'ping').map((s) => s.at - start);
    expect(pings).toEqual([10_000, 20_000, 30_000, 40_000, 50_000, 60_000]);
    expect(h.logs.some((l) => l.includes('pinging at the interval the registrar named'))).toBe(
      true,
    );
  });

  describe('a changed heartbeat told on the live connection', () => {
    const pingsOf = (link: FakeLink, from: number) =>
      link.sent.filter((s) => s.action === 'ping' && s.at > from).map((s) => s.at - from);
    const notice = (intervalSeconds: number, misses: number) => ({
      action: 'heartbeat-change',
      heartbeat: { intervalSeconds, misses },
    });

    it('pings at a shorter interval before it acknowledges, whatever the answer', async () => {
      const h = harness({ probe: null });
      h.supervisor.start();
      await h.clock.advance(0);
      const link = h.links[0] as FakeLink;
      const base = link.respond;
      // The acknowledgement is never answered (a lost reply).
      link.respond = (action, body) => (action === 'heartbeat' ? 'drop' : base(action, body));
      const at = h.clock.now();
      link.notify(notice(5, 2));
      await h.clock.advance(20_000);
      expect(link.sent.find((s) => s.action === 'heartbeat')?.body).toEqual({
        intervalSeconds: 5,
        misses: 2,
      });
      expect(pingsOf(link, at)).toEqual([5_000, 10_000, 15_000, 20_000]);
    });

    it('pings at a longer interval only once the registrar said ok, and keeps the shorter when refused', async () => {
      const h = harness({
        probe: null,
        onLink: (link) => {
          const base = link.respond;
          link.respond = (action, body) =>
            action === 'describe'
              ? {
                  action: 'describe',
                  ok: true,
                  entry: { metadata: { namespace: 'ns', name: 'web-10-0-0-1' } },
                  probe: null,
                  heartbeat: { intervalSeconds: 5, misses: 2 },
                }
              : base(action, body);
        },
      });
      h.supervisor.start();
      await h.clock.advance(1_000);
      const link = h.links[0] as FakeLink;
      const base = link.respond;
      link.respond = (action, body) =>
        action === 'heartbeat'
          ? { ok: false, error: { code: 'HeartbeatNotCurrent', message: 'changed again' } }
          : base(action, body);
      let at = h.clock.now();
      link.notify(notice(60, 3));
      await h.clock.advance(20_000);
      // Refused: it keeps pinging every 5 s.
      expect(pingsOf(link, at).length).toBeGreaterThanOrEqual(4);
      expect(h.logs.some((l) => l.includes('could not acknowledge the heartbeat'))).toBe(true);

      link.respond = (action, body) =>
        action === 'heartbeat'
          ? { action: 'heartbeat', ok: true, heartbeat: body }
          : base(action, body);
      link.notify(notice(60, 3));
      await h.clock.advance(0);
      at = h.clock.now();
      await h.clock.advance(125_000);
      expect(pingsOf(link, at)).toEqual([60_000, 120_000]);
    });

    it('asks again when the reply to its acknowledgement is lost, and takes the longer interval on the ok', async () => {
      const h = harness({ probe: null });
      h.supervisor.start();
      await h.clock.advance(0);
      const link = h.links[0] as FakeLink;
      const base = link.respond;
      let asked = 0;
      link.respond = (action, body) => {
        if (action !== 'heartbeat') return base(action, body);
        asked += 1;
        return asked === 1 ? 'drop' : { action: 'heartbeat', ok: true, heartbeat: body };
      };
      // Shorter than the configured 5 min, but longer than nothing yet named: 60 s.
      link.notify(notice(60, 3));
      await h.clock.advance(11_000);
      expect(asked).toBe(2);
      const at = h.clock.now();
      await h.clock.advance(121_000);
      // Every 60 s from the ok on.
      const pings = pingsOf(link, at);
      expect(pings).toHaveLength(2);
      expect((pings[1] ?? 0) - (pings[0] ?? 0)).toBe(60_000);
    });

    it('is ignored by a link that is no longer current', async () => {
      const h = harness({ probe: null });
      h.supervisor.start();
      await h.clock.advance(0);
      const link = h.links[0] as FakeLink;
      link.serverClose();
      link.notify(notice(5, 2));
      await h.clock.advance(0);
      expect(link.sent.filter((s) => s.action === 'heartbeat')).toEqual([]);
    });
  });

  it("keeps a connection whose pings API Gateway throttles: another tenant's ping flood does not make it reconnect", async () => {
    const h = harness({ probe: null });
    h.supervisor.start();
    await h.clock.advance(0);
    const link = h.links[0] as FakeLink;
    // The stage's `ping` route is shared and flooded: every ping is answered by API Gateway
    // itself, never by a pong.
    link.respond = (action) => {
      if (action === 'ping') {
        link.gatewayAnswer('Too Many Requests');
        return 'drop';
      }
      return { action, ok: true };
    };
    await h.clock.advance(3 * (5 * 60_000) + 10_000);
    expect(link.sent.filter((s) => s.action === 'ping')).toHaveLength(3);
    expect(link.closed).toBe(false);
    expect(h.links).toHaveLength(1);
    expect(
      h.logs.filter((l) => l.includes('keeping it') && l.includes('Too Many Requests')),
    ).toHaveLength(3);
  });

  it('drops a connection that answered before the ping but not since: an old frame proves nothing', async () => {
    const h = harness({ probe: null });
    h.supervisor.start();
    await h.clock.advance(0);
    const link = h.links[0] as FakeLink;
    link.gatewayAnswer('Too Many Requests');
    link.respond = () => 'drop';
    await h.clock.advance(5 * 60_000 + 10_000);
    expect(link.closedBy).toBe('agent');
    expect(
      h.logs.some((l) => l.includes('no pong from the registrar; dropping the connection')),
    ).toBe(true);
  });

  it('closes its connection and schedules nothing more when stopped', async () => {
    const h = harness();
    h.supervisor.start();
    await h.clock.advance(0);
    await h.supervisor.stop();
    expect((h.links[0] as FakeLink).closedBy).toBe('agent');
    await h.clock.advance(3 * 3_600_000);
    expect(h.opens).toHaveLength(1);
  });

  it('reconnects when the connection closes while describe still waits for its reply', async () => {
    let first = true;
    const h = harness({
      onLink: (link) => {
        if (!first) return;
        first = false;
        link.respond = () => 'drop';
      },
    });
    h.supervisor.start();
    await h.clock.advance(1_000);
    (h.links[0] as FakeLink).serverClose(1006);
    await h.clock.advance(2_000);
    expect(h.links).toHaveLength(2);
    expect(h.supervisor.entryName).toBe('ns/web-10-0-0-1');
  });

  it('reconnects when a connection closes before it could be used', async () => {
    const h = harness({
      outcomes: [
        () => {
          const link = new FakeLink(h.clock, HTTP_PROBE);
          link.serverClose(1006);
          return Promise.resolve(link);
        },
      ],
    });
    h.supervisor.start();
    await h.clock.advance(2_000);
    expect(h.opens).toHaveLength(2);
    expect(h.links).toHaveLength(1);
  });
});
