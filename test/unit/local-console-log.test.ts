import { describe, expect, it } from 'vitest';
import {
  createRenderer,
  loggerLevelFor,
  parseConsoleLevel,
  renderingConsole,
} from '../../infra/local/console-log.ts';

/**
 * The local console's lines, from records shaped exactly as the handlers log them (messages
 * and keys as in functions/*.ts; the envelope as Powertools adds it).
 */
const envelope = (functionName: string) => ({
  timestamp: '2026-11-23T16:50:34.000Z',
  service: 'workload-registrar',
  cold_start: false,
  function_arn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
  function_memory_size: '256',
  function_name: functionName,
  function_request_id: '9b7b6e73-27e5-4f38-a880-49414b0af675',
  sampling_rate: 0,
});

const connected = (outcome: string, connectionId = 'c1') => ({
  level: 'INFO',
  message: 'workload connected',
  ...envelope('registrar-connect'),
  connectionId,
  entry: 'shop/web-10.0.0.12',
  outcome,
  principal: 'token:abc',
});

const health = (outcome: string, healthy: boolean, reason?: string) => ({
  level: 'INFO',
  message: 'health reported',
  ...envelope('registrar-message'),
  connectionId: 'c1',
  routeKey: 'health',
  entry: 'shop/web-10.0.0.12',
  outcome,
  healthy,
  ...(reason ? { reason } : {}),
});

const policy = { gracePeriodMs: 300_000, maxConnectionAgeMs: 7_200_000 };
const TIME = /^\d\d:\d\d:\d\d /;

function lines(records: Record<string, unknown>[], level: 'DEBUG' | 'INFO' | 'WARN' = 'INFO') {
  const render = createRenderer({ ...policy, level });
  return records
    .map(render)
    .flatMap((line) => (line === undefined ? [] : [line.replace(TIME, '')]));
}

describe('the local console', () => {
  it('tells a registration, a reconnect and a second holder in one line each', () => {
    expect(
      lines([connected('created'), connected('reconnected', 'c2'), connected('joined', 'c3')]),
    ).toEqual([
      'registered shop/web-10.0.0.12 (connection c1)',
      'reconnected shop/web-10.0.0.12 (connection c2)',
      'shop/web-10.0.0.12 also held by connection c3',
    ]);
  });

  it('prefixes each line with the local time of the record', () => {
    const [line] = [createRenderer({ ...policy, level: 'INFO' })(connected('created'))];
    const at = new Date('2026-11-23T16:50:34.000Z');
    const hhmmss = [at.getHours(), at.getMinutes(), at.getSeconds()]
      .map((part) => String(part).padStart(2, '0'))
      .join(':');
    expect(line).toBe(`${hhmmss} registered shop/web-10.0.0.12 (connection c1)`);
  });

  it('tells health only when it changes, with the reason when unhealthy', () => {
    expect(
      lines([
        health('transitioned', true),
        health('refreshed', true),
        health('transitioned', false, 'HTTP 503'),
        health('refreshed', false, 'HTTP 503'),
        health('ignored', false, 'HTTP 503'),
      ]),
    ).toEqual([
      'shop/web-10.0.0.12 healthy -> true',
      'shop/web-10.0.0.12 healthy -> false: HTTP 503',
    ]);
  });

  it('tells a drain as the health change it is', () => {
    expect(
      lines([
        {
          level: 'INFO',
          message: 'workload draining',
          ...envelope('registrar-message'),
          connectionId: 'c1',
          routeKey: 'drain',
          entry: 'shop/web-10.0.0.12',
        },
      ]),
    ).toEqual([
      'shop/web-10.0.0.12 healthy -> false: Draining (its agent is stopping) (connection c1)',
    ]);
  });

  it('tells the last holder leaving apart from one of several', () => {
    const disconnected = (outcome: string, connectionId: string) => ({
      level: 'INFO',
      message: 'workload disconnected',
      ...envelope('registrar-disconnect'),
      connectionId,
      entry: 'shop/web-10.0.0.12',
      outcome,
    });
    expect(
      lines([
        disconnected('still-held', 'c1'),
        disconnected('disconnected', 'c2'),
        disconnected('unknown-connection', 'c3'),
      ]),
    ).toEqual([
      'connection c1 left shop/web-10.0.0.12; still held by another',
      'disconnected shop/web-10.0.0.12 (last holder left: connection c2)',
    ]);
  });

  it('tells a sweep with the policy that made it', () => {
    const swept = (reason: string) => ({
      level: 'INFO',
      message: 'entry swept',
      ...envelope('registrar-sweeper'),
      entry: 'shop/web-10.0.0.12',
      reason,
    });
    expect(lines([swept('disconnected'), swept('stale')])).toEqual([
      'swept shop/web-10.0.0.12 after 5m grace',
      'swept shop/web-10.0.0.12: still marked connected 1.5 x 2h after its last connect',
    ]);
  });

  it('makes a refusal by the authorizer one line with its status and the reason it logged', () => {
    const refusedByToken = [
      {
        level: 'WARN',
        message: 'request refused',
        ...envelope('registrar-authorize'),
        connectionId: 'c9',
        code: 'Unauthenticated',
        statusCode: 401,
        reason: 'unknown join token',
      },
      {
        level: 'INFO',
        message: 'gateway: upgrade refused by the authorizer',
        timestamp: '2026-11-23T16:50:34.000Z',
        connectionId: 'c9',
        statusCode: 401,
        reason: 'authorizer threw Unauthorized',
      },
    ];
    const otherNamespace = [
      {
        level: 'WARN',
        message: 'join token used for another namespace',
        ...envelope('registrar-authorize'),
        connectionId: 'c8',
        tokenId: 'abc',
        tokenNamespace: 'shop',
        requestedNamespace: 'other',
      },
      {
        level: 'INFO',
        message: 'gateway: upgrade refused by the authorizer',
        connectionId: 'c8',
        statusCode: 403,
        reason: 'authorizer policy denies $connect',
      },
    ];
    expect(lines([...refusedByToken, ...otherNamespace])).toEqual([
      'refused $connect with 401 Unauthenticated: unknown join token (connection c9)',
      'refused $connect with 403 join token of namespace shop used for namespace other (connection c8)',
    ]);
  });

  it("makes a $connect refusal one line: the handler's, not the gateway's echo of it", () => {
    expect(
      lines([
        {
          level: 'WARN',
          message: 'request refused',
          ...envelope('registrar-connect'),
          connectionId: 'c7',
          code: 'NotFound',
          statusCode: 404,
          reason: 'cannot find WorkloadGroup shop/nogroup',
        },
        {
          level: 'INFO',
          message: 'gateway: upgrade refused by $connect',
          connectionId: 'c7',
          statusCode: 404,
        },
      ]),
    ).toEqual([
      'refused $connect with 404 NotFound: cannot find WorkloadGroup shop/nogroup (connection c7)',
    ]);
  });

  it('shows chatter only at DEBUG, and only warnings and refusals at WARN', () => {
    const chatter = {
      level: 'INFO',
      message: 'join token accepted',
      ...envelope('registrar-authorize'),
      connectionId: 'c1',
      tokenId: 'abc',
      namespace: 'shop',
    };
    const warning = {
      level: 'WARN',
      message: 'could not record the sweep run',
      ...envelope('registrar-sweeper'),
      held: 1,
    };
    expect(lines([chatter, connected('created'), warning])).toEqual([
      'registered shop/web-10.0.0.12 (connection c1)',
      'WARN could not record the sweep run (registrar-sweeper) held=1',
    ]);
    expect(lines([chatter, connected('created'), warning], 'DEBUG')).toEqual([
      'INFO join token accepted connectionId=c1 tokenId=abc namespace=shop',
      'registered shop/web-10.0.0.12 (connection c1)',
      'WARN could not record the sweep run (registrar-sweeper) held=1',
    ]);
    expect(lines([chatter, connected('created'), warning], 'WARN')).toEqual([
      'WARN could not record the sweep run (registrar-sweeper) held=1',
    ]);
  });

  it('tells the connections the sweeper closed for silence, with the count by namespace', () => {
    const silent = (fields: Record<string, unknown>) => ({
      level: 'WARN',
      message: 'connections silent past their heartbeat were closed; their entries left',
      ...envelope('registrar-sweeper'),
      ...fields,
    });
    expect(
      lines([
        silent({ silent: 1, byNamespace: { shop: 1 }, closeFailed: 0 }),
        silent({
          silent: 3,
          byNamespace: { shop: 2, pay: 1 },
          closeFailed: 1,
          firstCloseFailure: 'TooManyRequestsException: slow down',
        }),
      ]),
    ).toEqual([
      'sweep closed 1 connection silent past its heartbeat (shop: 1)',
      'sweep closed 3 connections silent past their heartbeat (pay: 1, shop: 2); 1 close failed: TooManyRequestsException: slow down',
    ]);
  });

  it("tells fail static in the fleet's and the cells' words, never normal beside a slowed cell", () => {
    // Issue 35: the console printed `sweep normal ... disruptedZones=[pay#us-east-1a] ...
    // slowed=0` while `registrar sweep status` said the cell was slowed.
    const slowed = {
      level: 'WARN',
      message: 'sweep mode changed: normal -> slowed',
      ...envelope('registrar-sweeper'),
      mode: 'slowed',
      slowedCells: ['pay#us-east-1/us-east-1a until 2026-03-01T13:00:00.000Z'],
      heldCells: [],
      deferred: { held: 0, slowed: 0 },
    };
    const held = {
      ...slowed,
      message: 'sweep held',
      mode: 'held',
      why: 'entries went away abnormally and no VM connected for 300s',
      slowedCells: [],
      heldCells: ['a#z', 'b#z', 'c#z', 'd#z', 'e#z', 'f#z', 'g#z'],
      deferred: { held: 12, slowed: 0 },
    };
    expect(lines([slowed, held])).toEqual([
      'sweep mode changed: normal -> slowed: slowed in pay#us-east-1/us-east-1a until 2026-03-01T13:00:00.000Z; deferred this run: 0 held, 0 slowed',
      'sweep held: held in a#z, b#z, c#z, d#z, e#z and 2 more; why: entries went away abnormally and no VM connected for 300s; deferred this run: 12 held, 0 slowed',
    ]);
  });

  it('tells projection failing, recovering and projecting, naming the cluster', () => {
    const where = { cluster: 'kind-mesh', server: 'https://127.0.0.1:6443' };
    expect(
      lines([
        { level: 'WARN', message: 'projection failing', ...where, cause: 'fetch failed (x)' },
        { level: 'INFO', message: 'projection recovered', ...where },
        {
          level: 'INFO',
          message: 'projected',
          ...where,
          kind: 'WorkloadEntry',
          action: 'created',
          namespace: 'shop',
          name: 'web-a',
        },
      ]),
    ).toEqual([
      'projection into cluster kind-mesh (https://127.0.0.1:6443) failing: fetch failed (x)',
      'projection into cluster kind-mesh (https://127.0.0.1:6443) recovered',
      'projected: created WorkloadEntry shop/web-a in cluster kind-mesh',
    ]);
  });

  it('renders an error with its name and message, without the Lambda envelope', () => {
    expect(
      lines([
        {
          level: 'ERROR',
          message: 'unexpected error',
          ...envelope('registrar-connect'),
          error: { name: 'TimeoutError', message: 'socket hang up', stack: 'at ...' },
        },
      ]),
    ).toEqual(['ERROR unexpected error (registrar-connect) error="TimeoutError: socket hang up"']);
  });

  it('writes what Powertools prints through it, rendered, one line each', () => {
    const written: string[] = [];
    const sink = renderingConsole(createRenderer({ ...policy, level: 'INFO' }), (line) =>
      written.push(line),
    );
    sink.info(JSON.stringify(connected('created')));
    sink.info(JSON.stringify(health('refreshed', true)));
    sink.warn('not json');
    expect(written.map((line) => line.replace(TIME, ''))).toEqual([
      'registered shop/web-10.0.0.12 (connection c1)\n',
      'not json\n',
    ]);
  });
});

describe('console settings', () => {
  it('lets events through to a human console whatever it shows, and json at its level', () => {
    expect(loggerLevelFor({ format: 'human', level: 'WARN' })).toBe('INFO');
    expect(loggerLevelFor({ format: 'human', level: 'DEBUG' })).toBe('DEBUG');
    expect(loggerLevelFor({ format: 'json', level: 'WARN' })).toBe('WARN');
  });

  it('refuses an unknown level, naming the variable and the value', () => {
    expect(parseConsoleLevel('debug', 'LOG_LEVEL')).toBe('DEBUG');
    expect(() => parseConsoleLevel('verbose', 'LOG_LEVEL')).toThrow(
      "invalid LOG_LEVEL 'verbose': must be one of trace, debug, info, warn, error, critical, silent",
    );
  });
});
