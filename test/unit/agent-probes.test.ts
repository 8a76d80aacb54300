import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execProbe } from '../../agent/probes/exec-probe.ts';
import { httpProbe } from '../../agent/probes/http-probe.ts';
import { tcpProbe } from '../../agent/probes/tcp-probe.ts';
import {
  type HttpTarget,
  startHttpTarget,
  startTcpTarget,
  type TcpTarget,
} from '../fixtures/agent-targets.ts';
import { startSilentPort } from '../fixtures/silent-port.ts';

describe('httpGet probe', () => {
  let target: HttpTarget;
  beforeAll(async () => {
    target = await startHttpTarget();
  });
  afterAll(() => target.close());

  it.each([200, 204, 302, 399])('is healthy for status %i', async (status) => {
    target.status = status;
    expect((await httpProbe({ port: target.port, path: '/healthz' }, '127.0.0.1', 1_000)).ok).toBe(
      true,
    );
  });

  it.each([400, 404, 500, 503])('is unhealthy for status %i, naming it', async (status) => {
    target.status = status;
    const result = await httpProbe({ port: target.port, path: '/healthz' }, '127.0.0.1', 1_000);
    expect(result).toEqual({
      ok: false,
      message: `HTTP probe of http://127.0.0.1:${target.port}/healthz failed with status code ${status}`,
    });
  });

  it('sends the custom headers of the probe', async () => {
    target.status = 200;
    await httpProbe(
      { port: target.port, httpHeaders: [{ name: 'X-Probe', value: 'mesh' }] },
      '127.0.0.1',
      1_000,
    );
    expect(target.lastHeaders['x-probe']).toBe('mesh');
  });

  it('is unhealthy when nothing listens', async () => {
    const closed = await startHttpTarget();
    await closed.close();
    const result = await httpProbe({ port: closed.port }, '127.0.0.1', 1_000);
    expect(result.ok).toBe(false);
    expect(result.message).toContain('ECONNREFUSED');
  });

  it('is unhealthy when the answer takes longer than the timeout', async () => {
    // Accepts connections and never answers.
    const silent = await startSilentPort();
    const port = silent.port;
    const result = await httpProbe({ port }, '127.0.0.1', 200);
    await silent.close();
    expect(result).toEqual({
      ok: false,
      message: `HTTP probe of http://127.0.0.1:${port}/ timed out after 0.2s`,
    });
  });

  it('probes HTTPS without verifying the certificate, as the kubelet does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-tls-'));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      { stdio: 'ignore' },
    );
    const tls = {
      key: readFileSync(join(dir, 'key.pem')),
      cert: readFileSync(join(dir, 'cert.pem')),
    };
    rmSync(dir, { recursive: true, force: true });
    const server = createServer(tls, (_req, res) => res.writeHead(200).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const result = await httpProbe({ port, scheme: 'HTTPS' }, '127.0.0.1', 2_000);
    server.close();
    expect(result.ok).toBe(true);
  });
});

describe('tcpSocket probe', () => {
  let target: TcpTarget;
  beforeAll(async () => {
    target = await startTcpTarget();
  });
  afterAll(() => target.close());

  it('is healthy while the port accepts connections and unhealthy once it is closed', async () => {
    expect((await tcpProbe({ port: target.port }, '127.0.0.1', 1_000)).ok).toBe(true);
    await target.close();
    const result = await tcpProbe({ port: target.port }, '127.0.0.1', 1_000);
    expect(result.ok).toBe(false);
    expect(result.message).toContain('ECONNREFUSED');
  });
});

describe('exec probe', () => {
  it('is healthy when the command exits 0', async () => {
    expect(await execProbe({ command: ['true'] }, 2_000)).toEqual({
      ok: true,
      message: 'exec probe true exited 0',
    });
  });

  it('is unhealthy when the command exits non-zero, with its output', async () => {
    const result = await execProbe({ command: ['sh', '-c', 'echo disk full >&2; exit 3'] }, 2_000);
    expect(result).toEqual({ ok: false, message: 'exec probe sh exited 3: disk full' });
  });

  it('is unhealthy and kills the command when it runs past the timeout', async () => {
    const started = Date.now();
    const result = await execProbe({ command: ['sleep', '5'] }, 200);
    expect(result).toEqual({ ok: false, message: 'exec probe sleep timed out after 0.2s' });
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it('is unhealthy when the command does not exist', async () => {
    const result = await execProbe({ command: ['/nonexistent/check'] }, 1_000);
    expect(result).toEqual({
      ok: false,
      message: 'exec probe /nonexistent/check could not start: ENOENT',
    });
  });
});
