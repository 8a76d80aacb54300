import { describe, expect, it } from 'vitest';
import { type AgentTiming, DEFAULT_TIMING } from '../../agent/config.ts';
import { ACK_ATTEMPTS, transition } from '../../agent/supervisor-machine.ts';
import {
  type Effect,
  initialState,
  type MachineEvent,
  type MachineState,
  type Phase,
  type TimerName,
} from '../../agent/supervisor-state.ts';
import { REPLACED_CLOSE_REASON } from '../../lib/protocol/close-reasons.ts';

/**
 * The supervisor's transitions one by one: a named state, one event, the next state and the
 * effects asked for. The shell (Supervisor) and its timing are covered by
 * agent-supervisor.test.ts and agent-drain.test.ts; here no timer runs and no socket opens.
 */

const TIMING: AgentTiming = { ...DEFAULT_TIMING, maxConnectionAgeMs: 100_000 };
const T0 = 1_000_000;

interface Context {
  now?: number;
  random?: number;
}

function step(state: MachineState, event: MachineEvent, c: Context = {}) {
  return transition(state, event, {
    now: c.now ?? T0,
    random: () => c.random ?? 0.5,
    timing: TIMING,
  });
}

function play(events: MachineEvent[], state = initialState()): MachineState {
  let s = state;
  for (const event of events) s = step(s, event).state;
  return s;
}

const failed: MachineEvent = {
  type: 'open-failed',
  failure: { kind: 'failed', description: 'ECONNREFUSED connect' },
};
const fire = (state: MachineState, timer: TimerName): MachineEvent => ({
  type: 'timer-fired',
  timer,
  token: state.timers[timer]?.token ?? -1,
});

/** The named states, each reached from `idle` by the events that lead there. */
const STATES: Record<Phase, () => MachineState> = {
  idle: () => initialState(),
  connecting: () => play([{ type: 'start' }]),
  'backing-off': () => play([{ type: 'start' }, failed]),
  connected: () => play([{ type: 'start' }, { type: 'opened', linkId: 1, closed: false }]),
  rotating: (): MachineState => {
    const connected = STATES.connected();
    return play([fire(connected, 'rotate')], connected);
  },
  draining: () => play([{ type: 'drain' }], STATES.connected()),
  stopped: () => play([{ type: 'stop' }], STATES.connected()),
};

/** An effect in a few words: what it does and to what; logs and emits by level and type. */
function said(effect: Effect): string {
  switch (effect.type) {
    case 'arm':
    case 'cancel':
      return `${effect.type} ${effect.timer}`;
    case 'watch':
    case 'describe':
    case 'ping':
    case 'ack-heartbeat':
      return `${effect.type} ${effect.linkId}`;
    case 'close':
      return `close ${effect.linkId}${effect.reason ? ` (${effect.reason})` : ''}`;
    case 'log':
      return `log ${effect.level}`;
    case 'emit':
      return `emit ${effect.event.type}`;
    default:
      return effect.type;
  }
}

const armedIn = (state: MachineState) => Object.keys(state.timers).sort();

describe('the supervisor machine: its named states', () => {
  it.each([
    ['idle', []],
    ['connecting', []],
    ['backing-off', ['retry']],
    ['connected', ['ping', 'rotate']],
    ['rotating', ['ping']],
    ['draining', ['ping']],
    ['stopped', []],
  ] as [Phase, TimerName[]][])('%s arms exactly the timers %j', (phase, timers) => {
    const state = STATES[phase]();
    expect(state.phase).toBe(phase);
    expect(armedIn(state)).toEqual(timers);
  });
});

/** Freezes a state all the way down: a transition that wrote to its input would throw. */
function frozen<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const inner of Object.values(value)) frozen(inner);
    Object.freeze(value);
  }
  return value;
}

describe('the supervisor machine is pure', () => {
  it('never writes to the state it is given', () => {
    const from = frozen(STATES.connected());
    const events: MachineEvent[] = [
      fire(from, 'rotate'),
      fire(from, 'ping'),
      { type: 'closed', linkId: 1, code: 1006, reason: '' },
      { type: 'link-stuck', linkId: 1, reason: 'x' },
      { type: 'heartbeat-told', linkId: 1, intervalSeconds: 10, misses: 3 },
      { type: 'drain' },
      { type: 'stop' },
    ];
    for (const event of events) expect(() => step(from, event)).not.toThrow();
    const asked = frozen(
      play([{ type: 'heartbeat-told', linkId: 1, intervalSeconds: 60, misses: 3 }], from),
    );
    expect(() =>
      step(asked, { type: 'heartbeat-answered', ackId: 1, outcome: 'lost', message: 'lost' }),
    ).not.toThrow();
  });

  it('gives the same answer to the same state, event, time and jitter', () => {
    const from = STATES.connected();
    const event: MachineEvent = { type: 'closed', linkId: 1, code: 1006, reason: '' };
    expect(step(from, event, { now: T0 + 5, random: 0.25 })).toEqual(
      step(from, event, { now: T0 + 5, random: 0.25 }),
    );
  });
});

describe('the supervisor machine: each transition', () => {
  const opened2: MachineEvent = { type: 'opened', linkId: 2, closed: false };
  const closed1: MachineEvent = { type: 'closed', linkId: 1, code: 1006, reason: '' };
  const stop: MachineEvent = { type: 'stop' };
  const drain: MachineEvent = { type: 'drain' };

  it.each<[Phase, string, (s: MachineState) => MachineEvent, Phase, string[]]>([
    ['idle', 'start', () => ({ type: 'start' }), 'connecting', ['emit connecting', 'open']],
    ['idle', 'stop', () => stop, 'stopped', ['probe-stop', 'health-stop']],
    [
      'connecting',
      'opened',
      () => ({ type: 'opened', linkId: 1, closed: false }),
      'connected',
      [
        'watch 1',
        'log info',
        'emit connected',
        'arm rotate',
        'arm ping',
        'health-resend',
        'describe 1',
      ],
    ],
    [
      'connecting',
      'open failed',
      () => failed,
      'backing-off',
      ['log warn', 'emit retry-scheduled', 'arm retry'],
    ],
    [
      'connecting',
      'refused',
      () => ({
        type: 'open-failed',
        failure: { kind: 'refused', reason: 'refused (401)', status: 401, missingGroup: false },
      }),
      'backing-off',
      ['log error', 'emit retry-scheduled', 'arm retry'],
    ],
    ['connecting', 'stop', () => stop, 'stopped', ['probe-stop', 'health-stop']],
    [
      'backing-off',
      'retry due',
      (s) => fire(s, 'retry'),
      'connecting',
      ['emit connecting', 'open'],
    ],
    ['backing-off', 'stop', () => stop, 'stopped', ['cancel retry', 'probe-stop', 'health-stop']],
    [
      'backing-off',
      'drain',
      () => drain,
      'draining',
      ['cancel retry', 'probe-stop', 'health-stop', 'emit draining'],
    ],
    [
      'connected',
      'rotation due',
      (s) => fire(s, 'rotate'),
      'rotating',
      ['emit connecting', 'open'],
    ],
    ['connected', 'ping due', (s) => fire(s, 'ping'), 'connected', ['arm ping', 'ping 1']],
    [
      'connected',
      'closed',
      () => closed1,
      'backing-off',
      [
        'emit closed',
        'cancel rotate',
        'cancel ping',
        'log warn',
        'emit retry-scheduled',
        'arm retry',
      ],
    ],
    [
      'connected',
      'stop',
      () => stop,
      'stopped',
      ['cancel rotate', 'cancel ping', 'probe-stop', 'health-stop'],
    ],
    [
      'connected',
      'drain',
      () => drain,
      'draining',
      ['cancel rotate', 'probe-stop', 'health-stop', 'emit draining'],
    ],
    [
      'connected',
      'link stuck',
      () => ({ type: 'link-stuck', linkId: 1, reason: 'two health reports unacknowledged' }),
      'connected',
      ['emit replacing', 'log warn', 'emit retry-scheduled', 'arm retry'],
    ],
    [
      'rotating',
      'opened',
      () => opened2,
      'connected',
      [
        'watch 2',
        'log info',
        'emit connected',
        'arm rotate',
        'cancel ping',
        'arm ping',
        'health-resend',
        `close 1 (${REPLACED_CLOSE_REASON})`,
        'describe 2',
      ],
    ],
    [
      'rotating',
      'current closed',
      () => closed1,
      'connecting',
      ['emit closed', 'cancel ping', 'log warn'],
    ],
    ['draining', 'hold', () => ({ type: 'hold-drain', ms: 10_000 }), 'draining', ['arm drain']],
    ['draining', 'closed', () => closed1, 'draining', ['emit closed', 'cancel ping', 'log warn']],
    ['draining', 'stop', () => stop, 'stopped', ['cancel ping', 'probe-stop', 'health-stop']],
    ['draining', 'drain again', () => drain, 'draining', []],
    ['stopped', 'closed', () => closed1, 'stopped', ['emit closed']],
    ['stopped', 'start', () => ({ type: 'start' }), 'stopped', []],
  ])('%s, on %s: %s with %j', (from, _event, event, to, effects) => {
    const state = STATES[from]();
    const next = step(state, event(state));
    expect(next.state.phase).toBe(to);
    expect(next.effects.map(said)).toEqual(effects);
  });
});

describe('the supervisor machine under fault', () => {
  it('a connection that closes before it could be used backs off like a lost one', () => {
    const next = step(STATES.connecting(), { type: 'opened', linkId: 1, closed: true });
    expect(next.state.phase).toBe('backing-off');
    expect(next.effects.map(said)).toEqual([
      'watch 1',
      'emit closed',
      'log warn',
      'emit retry-scheduled',
      'arm retry',
    ]);
    expect(next.effects).toContainEqual(
      expect.objectContaining({
        message: expect.stringContaining('(1006 closed right after opening)'),
      }),
    );
  });

  it('a close during a rotation hands the reconnect to the upgrade under way, and arms nothing', () => {
    const next = step(STATES.rotating(), {
      type: 'closed',
      linkId: 1,
      code: 1001,
      reason: 'going away',
    });
    expect(next.state.phase).toBe('connecting');
    expect(armedIn(next.state)).toEqual([]);
    expect(next.state.attempt).toEqual({ kind: 'rotate' });
    expect(next.effects).toContainEqual(
      expect.objectContaining({
        message:
          'the connection closed (1001 going away); a new connection is already being opened',
      }),
    );
  });

  it('a rotation whose new socket fails keeps the current connection and retries as a rotation', () => {
    const next = step(STATES.rotating(), failed);
    expect(next.state.phase).toBe('connected');
    expect(next.state.current?.id).toBe(1);
    expect(next.state.timers.retry?.kind).toBe('rotate');
    expect(next.effects.map(said)).not.toContain('close 1');
    expect(next.effects).toContainEqual(
      expect.objectContaining({
        message: expect.stringContaining('(the current connection stays open)'),
      }),
    );
  });

  it('a retry due after a failed rotation opens beside the live connection (make before break)', () => {
    const failedRotation = play([failed], STATES.rotating());
    const next = step(failedRotation, fire(failedRotation, 'retry'));
    expect(next.state.phase).toBe('rotating');
    expect(next.effects).toContainEqual({
      type: 'emit',
      event: { type: 'connecting', kind: 'rotate' },
    });
  });

  it('a timer that fires after stop does nothing', () => {
    const backingOff = STATES['backing-off']();
    const late = fire(backingOff, 'retry');
    const stopped = play([{ type: 'stop' }], backingOff);
    const next = step(stopped, late);
    expect(next.effects).toEqual([]);
    expect(next.state.phase).toBe('stopped');
  });

  it('a timer armed again ignores the fire of its earlier arming', () => {
    const connected = STATES.connected();
    const stale = fire(connected, 'ping');
    const pinged = play([stale], connected);
    expect(step(pinged, stale).effects).toEqual([]);
    expect(step(pinged, fire(pinged, 'ping')).effects.map(said)).toEqual(['arm ping', 'ping 1']);
  });

  it('a describe reply from a connection already replaced changes nothing', () => {
    const rotated = play([{ type: 'opened', linkId: 2, closed: false }], STATES.rotating());
    const late = step(rotated, {
      type: 'described',
      linkId: 1,
      reply: {
        name: 'ns/web',
        connectionId: 'a=',
        maintenance: null,
        probe: null,
        heartbeat: null,
      },
    });
    expect(late.effects).toEqual([]);
    expect(late.state.entryName).toBeUndefined();
  });

  it('a missed pong from a connection no longer current closes nothing', () => {
    const rotated = play([{ type: 'opened', linkId: 2, closed: false }], STATES.rotating());
    const late = step(rotated, {
      type: 'pong-missed',
      linkId: 1,
      answeredSince: false,
      gateway: undefined,
    });
    expect(late.effects).toEqual([]);
  });

  it('a missed pong drops the current connection unless a frame arrived since the ping', () => {
    const connected = STATES.connected();
    const silent = step(connected, {
      type: 'pong-missed',
      linkId: 1,
      answeredSince: false,
      gateway: undefined,
    });
    expect(silent.effects.map(said)).toEqual(['log warn', 'close 1']);
    const throttled = step(connected, {
      type: 'pong-missed',
      linkId: 1,
      answeredSince: true,
      gateway: 'Too Many Requests',
    });
    expect(throttled.effects.map(said)).toEqual(['log warn']);
  });

  it('a connection the registrar does not count is replaced once, however often it is told', () => {
    const stuck: MachineEvent = { type: 'link-stuck', linkId: 1, reason: 'holds no entry' };
    const once = play([stuck], STATES.connected());
    expect(once.replacements).toBe(1);
    expect(step(once, stuck).effects).toEqual([]);
  });

  it('the first replacement opens at once, the next ones with the failure backoff', () => {
    const first = step(STATES.connected(), { type: 'link-stuck', linkId: 1, reason: 'x' });
    expect(first.state.timers.retry?.ms).toBe(0);
    const next = play(
      [fire(first.state, 'retry'), { type: 'opened', linkId: 2, closed: false }],
      first.state,
    );
    const second = step(next, { type: 'link-stuck', linkId: 2, reason: 'x' }, { random: 0.5 });
    expect(second.state.timers.retry?.ms).toBe(500);
  });
});

describe('the supervisor machine: a heartbeat change told on the live connection', () => {
  const told = (intervalSeconds: number): MachineEvent => ({
    type: 'heartbeat-told',
    linkId: 1,
    intervalSeconds,
    misses: 3,
  });
  const answered = (outcome: 'ok' | 'lost' | 'failed', ackId = 1): MachineEvent => ({
    type: 'heartbeat-answered',
    ackId,
    outcome,
    message: outcome,
  });

  it('takes a shorter interval at once and asks for the acknowledgement', () => {
    const next = step(STATES.connected(), told(10));
    expect(next.state.pingMs).toBe(10_000);
    expect(next.effects.map(said)).toEqual([
      'log info',
      'cancel ping',
      'arm ping',
      'ack-heartbeat 1',
    ]);
  });

  it('takes a longer interval only on the ok', () => {
    const shortened = play([told(10), answered('ok')], STATES.connected());
    const longer = step(shortened, told(60));
    expect(longer.state.pingMs).toBe(10_000);
    const ok = step(longer.state, answered('ok', 2));
    expect(ok.state.pingMs).toBe(60_000);
    expect(ok.effects.map(said)).toEqual(['log info', 'cancel ping', 'arm ping', 'log info']);
  });

  it('acknowledged twice: the second answer changes nothing', () => {
    const longer = play([told(10), answered('ok'), told(60)], STATES.connected());
    const once = step(longer, answered('ok', 2));
    const twice = step(once.state, answered('ok', 2));
    expect(twice.effects).toEqual([]);
    expect(twice.state).toEqual(once.state);
  });

  it(`asks again on a lost reply, ${ACK_ATTEMPTS} times in all, then keeps the current ping`, () => {
    let state = play([told(10), answered('ok'), told(60)], STATES.connected());
    for (let attempt = 2; attempt <= ACK_ATTEMPTS; attempt++) {
      const next = step(state, answered('lost', 2));
      expect(next.effects.map(said)).toEqual(['ack-heartbeat 1']);
      state = next.state;
    }
    const gaveUp = step(state, answered('lost', 2));
    expect(gaveUp.effects).toEqual([
      expect.objectContaining({
        level: 'warn',
        message:
          'could not acknowledge the heartbeat the registrar named; keeping the current ping',
      }),
    ]);
    expect(gaveUp.state.pingMs).toBe(10_000);
  });

  it('does not ask again for a connection that is no longer current', () => {
    const asked = play([told(60)], STATES.connected());
    const closed = play([{ type: 'closed', linkId: 1, code: 1006, reason: '' }], asked);
    expect(step(closed, answered('lost')).effects.map(said)).toEqual(['log warn']);
  });

  it('is ignored from a connection that is not current, and while draining', () => {
    expect(step(STATES.rotating(), { ...told(10), linkId: 7 } as MachineEvent).effects).toEqual([]);
    expect(step(STATES.draining(), told(10)).effects).toEqual([]);
  });
});

describe('the supervisor machine: leaving', () => {
  it('stop during the drain delay ends it at once', () => {
    const held = play([{ type: 'hold-drain', ms: 10_000 }], STATES.draining());
    const next = step(held, { type: 'stop' });
    expect(next.effects.map(said).slice(0, 2)).toEqual(['cancel drain', 'end-drain']);
    expect(armedIn(next.state)).toEqual([]);
  });

  it('the drain delay ends when its timer fires', () => {
    const held = play([{ type: 'hold-drain', ms: 10_000 }], STATES.draining());
    expect(step(held, fire(held, 'drain')).effects).toEqual([{ type: 'end-drain' }]);
  });

  it('an upgrade that lands while draining is adopted but neither described nor rotated', () => {
    const draining = play([{ type: 'drain' }], STATES.rotating());
    const next = step(draining, { type: 'opened', linkId: 2, closed: false });
    expect(next.effects.map(said)).not.toContain('describe 2');
    expect(next.effects.map(said)).not.toContain('arm rotate');
    expect(next.state.current?.id).toBe(2);
  });

  it('a failed upgrade while draining is not retried', () => {
    const draining = play([{ type: 'drain' }], STATES.connecting());
    expect(step(draining, failed).effects).toEqual([]);
  });

  it('an upgrade that lands after stop is left for stop to close', () => {
    const stopped = play([{ type: 'stop' }], STATES.connecting());
    const next = step(stopped, { type: 'opened', linkId: 1, closed: false });
    expect(next.effects).toEqual([]);
    expect(next.state.current).toBeUndefined();
  });
});
