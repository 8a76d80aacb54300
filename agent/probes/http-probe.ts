import type { Probe } from '../../lib/domain/model.ts';
import { type ProbeResult, seconds } from './probe-result.ts';

// Through getBuiltinModule, not `import from 'node:http'`: Node builds the ESM view of a
// built-in by reading every export, and node:http's `WebSocket` getter loads undici (about
// 10 MB resident, for the agent's whole life) although the agent never uses it.
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

export type HttpGetAction = NonNullable<Probe['httpGet']>;

/**
 * Kubernetes httpGet semantics: a status in [200, 400) is healthy, anything else, a refused
 * connection or no answer within the timeout is not. Redirects are not followed (a 3xx already
 * counts as healthy). HTTPS does not verify the certificate, as the kubelet does not: the
 * target is the VM's own application, often with a self-signed certificate.
 */
export function httpProbe(
  action: HttpGetAction,
  defaultHost: string,
  timeoutMs: number,
): Promise<ProbeResult> {
  const scheme = action.scheme === 'HTTPS' ? 'https' : 'http';
  const host = action.host || defaultHost;
  const path = action.path ? (action.path.startsWith('/') ? action.path : `/${action.path}`) : '/';
  const target = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${action.port}${path}`;
  const headers: Record<string, string> = { 'User-Agent': 'registrar-agent-probe', Accept: '*/*' };
  for (const header of action.httpHeaders ?? []) headers[header.name] = header.value;

  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const options = {
      method: 'GET',
      headers,
      // No keep-alive: one probe per period would otherwise hold a socket open forever.
      agent: false,
      ...(scheme === 'https' ? { rejectUnauthorized: false } : {}),
    };
    const request = (scheme === 'https' ? https : http).request(target, options, (response) => {
      const status = response.statusCode ?? 0;
      // The body does not matter; drain it so the socket closes.
      response.resume();
      finish(
        status >= 200 && status < 400
          ? { ok: true, message: `HTTP probe succeeded with status code ${status}` }
          : { ok: false, message: `HTTP probe of ${target} failed with status code ${status}` },
      );
    });
    const timer = setTimeout(
      () =>
        finish({
          ok: false,
          message: `HTTP probe of ${target} timed out after ${seconds(timeoutMs)}`,
        }),
      timeoutMs,
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        message: `HTTP probe of ${target} failed: ${error.code ?? error.message}`,
      }),
    );
    request.end();
  });
}
