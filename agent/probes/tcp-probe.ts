import { connect } from 'node:net';
import type { Probe } from '../../lib/domain/model.ts';
import { type ProbeResult, seconds } from './probe-result.ts';

export type TcpSocketAction = NonNullable<Probe['tcpSocket']>;

/** Kubernetes tcpSocket semantics: healthy when a TCP connection opens within the timeout. */
export function tcpProbe(
  action: TcpSocketAction,
  defaultHost: string,
  timeoutMs: number,
): Promise<ProbeResult> {
  const host = action.host || defaultHost;
  const target = `${host}:${action.port}`;
  return new Promise((resolve) => {
    const socket = connect({ host, port: action.port });
    const finish = (result: ProbeResult) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () =>
        finish({
          ok: false,
          message: `TCP probe of ${target} timed out after ${seconds(timeoutMs)}`,
        }),
      timeoutMs,
    );
    socket.once('connect', () => finish({ ok: true, message: `TCP probe of ${target} connected` }));
    socket.once('error', (error: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        message: `TCP probe of ${target} failed: ${error.code ?? error.message}`,
      }),
    );
  });
}
