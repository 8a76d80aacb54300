import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { systemClock } from '../../agent/clock.ts';
import { openLink, type Reply } from '../../agent/connection.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { MaintenanceNotices } from '../../agent/maintenance-notices.ts';

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('what the agent logs of an operator’s cordon', () => {
  it('logs a cordon with its message, and the uncordon after it, once each', () => {
    const logger = memoryLogger('json');
    const notices = new MaintenanceNotices(logger);
    notices.apply(
      { action: 'maintenance', cordoned: true, message: 'INC-5: bad disk', at: at(0) },
      1,
    );
    // describe repeats it on every registration: the same notice is not logged again.
    notices.apply(
      { action: 'maintenance', cordoned: true, message: 'INC-5: bad disk', at: at(0) },
      2,
    );
    notices.apply({ action: 'maintenance', cordoned: false, at: at(1000) }, 2);
    expect(logger.lines.map((line) => JSON.parse(line))).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'cordoned by an operator: the registrar keeps this VM out of traffic (Healthy False, Maintenance) until it is uncordoned: INC-5: bad disk',
        connection: 1,
        since: at(0),
      }),
      expect.objectContaining({
        level: 'info',
        msg: 'uncordoned by an operator: back in traffic as its probe says',
        since: at(1000),
      }),
    ]);
    expect(notices.cordoned).toBe(false);
  });

  it('ignores a notice older than the last one (a push delivered late), and what is not a notice', () => {
    const logger = memoryLogger('json');
    const notices = new MaintenanceNotices(logger);
    notices.apply({ action: 'maintenance', cordoned: false, at: at(2000) }, 1);
    notices.apply({ action: 'maintenance', cordoned: true, message: 'old', at: at(1000) }, 1);
    notices.apply(undefined, 1);
    notices.apply({ action: 'maintenance', cordoned: 'yes', at: at(3000) }, 1);
    expect(notices.cordoned).toBe(false);
    // An uncordon the agent learns from describe, never having seen the cordon: nothing to say.
    expect(logger.lines).toEqual([]);
  });
});

describe('a notice on the connection', () => {
  let server: WebSocketServer | undefined;
  afterEach(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  it('goes to the notice listeners and answers no pending request (an older agent drops it)', async () => {
    const listening = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    server = listening;
    await new Promise((resolve) => listening.once('listening', resolve));
    server.on('connection', (socket) => {
      socket.on('message', () => {
        // Unasked, in the middle of a request: as API Gateway delivers a POST @connections.
        socket.send(
          JSON.stringify({ action: 'maintenance', cordoned: true, message: 'm', at: at(0) }),
        );
        setTimeout(
          () => socket.send(JSON.stringify({ action: 'describe', ok: true, entry: {} })),
          20,
        );
      });
    });
    const { port } = server.address() as AddressInfo;
    const link = await openLink(
      `ws://127.0.0.1:${port}`,
      {},
      {
        clock: systemClock,
        connectTimeoutMs: 2_000,
        replyTimeoutMs: 2_000,
      },
    );
    const notices: Reply[] = [];
    link.onNotice?.((notice) => notices.push(notice));
    const reply = await link.request('describe');
    expect(reply).toEqual({ action: 'describe', ok: true, entry: {} });
    expect(notices).toEqual([{ action: 'maintenance', cordoned: true, message: 'm', at: at(0) }]);
    await link.close();
  });
});
