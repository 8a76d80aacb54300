import { describe, expect, it } from 'vitest';
import { DEFAULT_TIMING } from '../../agent/config.ts';
import type { AgentLink } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { Supervisor } from '../../agent/supervisor.ts';
import { FakeLink } from '../fixtures/agent-fake-link.ts';
import { ManualClock } from '../fixtures/agent-manual-clock.ts';

/**
 * The shell around the machine: the phase it reports is the one the connection lives, and the
 * clock holds exactly the timers the machine says are armed (a group without a probe, so no
 * probe or health timer runs beside them).
 */
function harness() {
  const clock = new ManualClock();
  const links: FakeLink[] = [];
  const pending: ((link: AgentLink | Error) => void)[] = [];
  const supervisor = new Supervisor({
    clock,
    logger: memoryLogger(),
    timing: { ...DEFAULT_TIMING, maxConnectionAgeMs: 100_000 },
    open: () =>
      new Promise<AgentLink>((resolve, reject) => {
        pending.push((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)));
      }),
    createCheck: () => undefined,
  });
  const answer = async (outcome: 'link' | Error) => {
    const settle = pending.shift();
    if (!settle) throw new Error('no upgrade under way');
    if (outcome === 'link') {
      const link = new FakeLink(clock, null);
      links.push(link);
      settle(link);
    } else settle(outcome);
    await clock.advance(0);
  };
  const armed = () => Object.keys(supervisor.state.timers).length;
  return { clock, links, supervisor, answer, armed };
}

describe('the supervisor shell', () => {
  it('reports the phase the connection lives, and the clock holds only the armed timers', async () => {
    const h = harness();
    expect(h.supervisor.state.phase).toBe('idle');
    h.supervisor.start();
    expect(h.supervisor.state.phase).toBe('connecting');
    expect(h.clock.pending()).toEqual([]);

    await h.answer(new Error('connect ECONNREFUSED 127.0.0.1:1'));
    expect(h.supervisor.state.phase).toBe('backing-off');
    expect(h.clock.pending()).toHaveLength(h.armed());
    expect(h.armed()).toBe(1);

    await h.clock.advance(1_000);
    expect(h.supervisor.state.phase).toBe('connecting');
    await h.answer('link');
    expect(h.supervisor.state.phase).toBe('connected');
    expect(Object.keys(h.supervisor.state.timers).sort()).toEqual(['ping', 'rotate']);
    expect(h.clock.pending()).toHaveLength(2);

    await h.clock.advance(90_000);
    expect(h.supervisor.state.phase).toBe('rotating');
    await h.answer('link');
    expect(h.supervisor.state.phase).toBe('connected');
    expect(h.supervisor.state.current?.id).toBe(2);
    expect(h.links[0]?.closedBy).toBe('agent');
    expect(h.clock.pending()).toHaveLength(2);

    await h.supervisor.stop();
    expect(h.supervisor.state.phase).toBe('stopped');
    expect(h.clock.pending()).toEqual([]);
    expect(h.links[1]?.closedBy).toBe('agent');
  });

  it('closes an upgrade that lands after stop, and arms nothing for it', async () => {
    const h = harness();
    h.supervisor.start();
    const stopped = h.supervisor.stop();
    await h.answer('link');
    await stopped;
    expect(h.links[0]?.closedBy).toBe('agent');
    expect(h.supervisor.state.current).toBeUndefined();
    expect(h.clock.pending()).toEqual([]);
  });
});
