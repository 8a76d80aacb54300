import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../agent/agent.ts';
import { type AgentConfig, DEFAULT_TIMING, loadAgentConfig } from '../../agent/config.ts';
import { memoryLogger } from '../../agent/logger.ts';
import { refusalHint } from '../../agent/refusal-hints.ts';
import { type StandInGateway, startStandInGateway } from '../fixtures/agent-stand-in-gateway.ts';
import { waitFor } from '../fixtures/agent-targets.ts';

// The files this suite writes, removed when it ends.
const hintsDir = mkdtempSync(join(tmpdir(), 'agent-hints-'));
afterAll(() => rmSync(hintsDir, { recursive: true, force: true }));

const namespace = 'shop';

describe('refusal hints follow how the agent authenticates', () => {
  it('names the token file for a refused token read from a file', () => {
    const hint = refusalHint(401, {
      auth: { mode: 'token', tokenFile: '/etc/registrar-agent/token' },
      namespace,
    });
    expect(hint).toBe(
      "the join token is wrong, expired or revoked; create one with registrar token create -n shop [--service-account <the group's serviceAccount>] and write it to the token file /etc/registrar-agent/token (read again on every connect: no restart needed)",
    );
  });

  it('names the variable for a refused token from the environment, and says to restart', () => {
    const hint = refusalHint(401, {
      auth: { mode: 'token', token: 't', tokenSource: 'REGISTRAR_AGENT_TOKEN' },
      namespace,
    });
    expect(hint).toContain('set REGISTRAR_AGENT_TOKEN to it');
    expect(hint).toContain('restart the agent');
    expect(hint).not.toContain('token file');
  });

  it('names the config file for a refused token written in it', () => {
    const hint = refusalHint(401, {
      auth: { mode: 'token', token: 't', tokenSource: '/etc/registrar-agent/agent.yaml' },
      namespace,
    });
    expect(hint).toContain('set auth.token in /etc/registrar-agent/agent.yaml to it');
  });

  it('gives token advice, not IAM advice, for a 403 in token mode', () => {
    const hint = refusalHint(403, { auth: { mode: 'token', tokenFile: '/t' }, namespace }) ?? '';
    expect(hint).toContain('must be for namespace shop');
    expect(hint).toContain(
      "registrar token create -n shop [--service-account <the group's serviceAccount>]",
    );
    expect(hint).not.toMatch(/signature|execute-api|clock|policy allow/);
  });

  it('gives IAM advice for a 403 in IAM mode, and no token advice', () => {
    const hint = refusalHint(403, { auth: { mode: 'iam' }, namespace }) ?? '';
    expect(hint).toContain('IAM signature was refused');
    expect(hint).toContain('registrar policy allow --role-arn <arn> -n shop');
    expect(hint).not.toMatch(/token create|token file/);
  });

  it('says a 401 in IAM mode means the registrar wants a join token', () => {
    expect(refusalHint(401, { auth: { mode: 'iam' }, namespace })).toMatch(
      /^the registrar expects a join token/,
    );
  });

  it("after the registrar's own reason, says only where the new token goes", () => {
    const auth = { mode: 'token' as const, tokenFile: '/etc/registrar-agent/token' };
    expect(refusalHint(403, { auth, namespace }, true)).toBe(
      'then write it to the token file /etc/registrar-agent/token (read again on every connect: no restart needed)',
    );
    expect(refusalHint(403, { auth: { mode: 'iam' }, namespace }, true)).toBeUndefined();
    expect(refusalHint(404, { auth, namespace }, true)).toMatch(/create the WorkloadGroup/);
  });

  it('tells a token agent refused for a missing signature to use --auth iam, first', () => {
    const auth = { mode: 'token' as const, tokenFile: '/t' };
    const hint = refusalHint(403, { auth, namespace }, false, 'Missing Authentication Token');
    expect(hint).toMatch(/^the registrar is deployed with IAM authorization/);
    expect(hint).toContain('--auth iam');
    expect(hint).not.toContain('token create');
    // A plain 403 (the authorizer's Forbidden) is a token for another namespace or account.
    expect(refusalHint(403, { auth, namespace }, false, 'Forbidden')).toMatch(
      /^the join token is not allowed here/,
    );
  });

  it('adds nothing to a 409 whose reason the registrar gave: its message says what to do', () => {
    const auth = { mode: 'token' as const, tokenFile: '/t' };
    expect(refusalHint(409, { auth, namespace }, true)).toBeUndefined();
    expect(refusalHint(409, { auth: { mode: 'iam' }, namespace }, true)).toBeUndefined();
  });

  it('never advises deleting an entry for a bare 409, which may be a live VM holding the address', () => {
    const hint = refusalHint(409, { auth: { mode: 'token', tokenFile: '/t' }, namespace }) ?? '';
    expect(hint).toContain('another connected VM may hold this address');
    expect(hint).toContain('registrar describe we <name> -n <namespace> says which');
    expect(hint).toContain('do not delete an entry whose VM is connected');
    expect(hint).not.toMatch(/; delete it/);
  });

  it('records where the token came from', () => {
    const base = ['--url', 'ws://127.0.0.1:1', '--group', 'web', '--namespace', 'shop'];
    const fromEnv = loadAgentConfig([...base, '--ip', '10.0.0.5'], { REGISTRAR_AGENT_TOKEN: 'x' });
    expect(fromEnv).toMatchObject({ auth: { tokenSource: 'REGISTRAR_AGENT_TOKEN' } });
    const file = join(hintsDir, 'agent.yaml');
    writeFileSync(file, 'auth: { token: x }\nip: [10.0.0.5]\n');
    expect(loadAgentConfig([...base, '--config', file], {})).toMatchObject({
      auth: { tokenSource: file },
    });
  });
});

describe('an agent refused 401 by a registrar (stand-in, real WebSocket)', () => {
  let gateway: StandInGateway;
  beforeAll(async () => {
    gateway = await startStandInGateway({ token: 'right', groups: { 'shop/web': null } });
  });
  afterAll(() => gateway.close());

  async function refusalLine(auth: AgentConfig['auth']): Promise<string> {
    const logger = memoryLogger('json');
    const agent = await startAgent(
      {
        url: gateway.url,
        group: 'web',
        namespace,
        labels: {},
        auth,
        ips: ['10.0.0.7'],
        imds: { enabled: false, url: 'http://127.0.0.1:1', timeoutMs: 100 },
        logFormat: 'json',
        debug: false,
        timing: DEFAULT_TIMING,
      },
      { logger },
    );
    try {
      return await waitFor(
        () => logger.lines.find((line) => line.includes('refused (401')),
        'the refusal',
      );
    } finally {
      await agent.stop();
    }
  }

  it('tells an agent whose token came from the environment to set the variable', async () => {
    const line = await refusalLine({
      mode: 'token',
      token: 'wrong',
      tokenSource: 'REGISTRAR_AGENT_TOKEN',
    });
    expect(line).toContain('set REGISTRAR_AGENT_TOKEN to it');
    expect(line).not.toContain('token file');
  });

  it('tells an agent with a token file to write the file', async () => {
    const file = join(hintsDir, 'token');
    writeFileSync(file, 'wrong\n');
    const line = await refusalLine({ mode: 'token', tokenFile: file });
    expect(line).toContain(`write it to the token file ${file}`);
  });
});
