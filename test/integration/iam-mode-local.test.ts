import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { openLink, RefusedError } from '../../agent/connection.ts';
import { presignConnectUrl } from '../../agent/sigv4.ts';
import { IAM_NEEDS_TRUST, OptionsError, parseLocalOptions } from '../../infra/local/options.ts';
import type { IamCallerCredentials } from '../../infra/local/sigv4-verifier.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import {
  type AgentTestbed,
  entryName,
  NAMESPACE,
  startAgentTestbed,
} from '../fixtures/agent-testbed.ts';

/**
 * IAM mode end to end on the local runtime: the real agent presigns its upgrade with SigV4
 * (credentials from the environment, as the SDK's provider chain finds them on a VM), the local
 * gateway verifies the signature as API Gateway does, and $connect allows the caller's role
 * only by a policy stored with `registrar policy allow`.
 */

const ROLE = 'arn:aws:iam::000000000000:role/web-vm';
const WEB_VM: IamCallerCredentials = {
  accessKeyId: 'AKIDLOCALWEBVM',
  secretAccessKey: 'local-web-vm-secret',
  arn: 'arn:aws:sts::000000000000:assumed-role/web-vm/i-0123',
};

let bed: AgentTestbed;

beforeAll(async () => {
  // The agents here send no instance identity document: the operator made it optional.
  bed = await startAgentTestbed({
    authMode: 'iam',
    iamCallers: [WEB_VM],
    instanceAttestation: 'optional',
  });
  await bed.applyGroup('web');
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await bed?.close();
});

/** One upgrade attempt with the agent's own signer and connection code. */
async function connectOnce(
  credentials: { accessKeyId: string; secretAccessKey: string },
  ip: string,
): Promise<RefusedError | 'open'> {
  const url = buildConnectUrl(bed.runtime.url, {
    group: 'web',
    namespace: NAMESPACE,
    ips: [ip],
    labels: {},
  });
  const signed = await presignConnectUrl(url, { region: 'us-east-1', credentials });
  try {
    const link = await openLink(
      signed,
      {},
      { clock: systemClock, connectTimeoutMs: 5_000, replyTimeoutMs: 2_000 },
    );
    await link.close('done');
    return 'open';
  } catch (error) {
    if (error instanceof RefusedError) return error;
    throw error;
  }
}

describe('IAM mode on the local runtime', () => {
  it('refuses the agent 403 until its role is allowed, then registers it as the role session', async () => {
    // What the SDK's provider chain reads first; IMDS stays off, as on every test agent.
    vi.stubEnv('AWS_ACCESS_KEY_ID', WEB_VM.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', WEB_VM.secretAccessKey);
    vi.stubEnv('AWS_SESSION_TOKEN', undefined);
    vi.stubEnv('AWS_PROFILE', undefined);
    vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
    const agent = await bed.agent({
      auth: { mode: 'iam', region: 'us-east-1' },
      ips: ['10.0.0.7'],
      timingOverrides: { refusalBackoffMs: 300, refusalBackoffCapMs: 1_000 },
    });

    const refusal = await waitFor(
      () => agent.events.find((e) => e.type === 'retry-scheduled'),
      'the first refusal',
    );
    expect(refusal).toMatchObject({ refused: true, reason: expect.stringContaining('403') });
    expect(await bed.entry(entryName('web', '10.0.0.7'))).toBeUndefined();

    const allowed = await bed.cli(['policy', 'allow', '--role-arn', ROLE, '-n', NAMESPACE]);
    expect(allowed.code).toBe(0);

    await waitFor(
      () => agent.events.some((e) => e.type === 'registered'),
      'registration after the policy',
    );
    const record = await bed.registry.getEntry({
      namespace: NAMESPACE,
      name: entryName('web', '10.0.0.7'),
    });
    expect(record?.identity).toEqual({ principal: WEB_VM.arn, namespace: NAMESPACE });
    expect((await bed.entry(entryName('web', '10.0.0.7')))?.connected).toBe(true);
    await agent.stop();
  });

  it('warns an operator creating a join token that this registrar never reads one', async () => {
    const run = await bed.cli(['token', 'create', '-n', NAMESPACE]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^[^\n]+\n$/);
    expect(run.stderr).toMatch(
      /^warning: this registrar runs in IAM mode \(recorded [^)]+\): it never reads join tokens, so this one cannot be used; agents connect with --auth iam, allowed by registrar policy allow --role-arn <arn> -n /,
    );
  });

  it('refuses a caller whose signature is wrong 403, before $connect runs', async () => {
    const outcome = await connectOnce({ ...WEB_VM, secretAccessKey: 'not-the-secret' }, '10.0.0.8');

    expect(outcome).toBeInstanceOf(RefusedError);
    expect((outcome as RefusedError).status).toBe(403);
    expect((outcome as RefusedError).message).toMatch(
      /^The request signature we calculated does not match/,
    );
    expect(await bed.entry(entryName('web', '10.0.0.8'))).toBeUndefined();
  });

  it('refuses an access key it does not know 403', async () => {
    const outcome = await connectOnce(
      { accessKeyId: 'AKIDSTRANGER', secretAccessKey: 'x' },
      '10.0.0.9',
    );

    expect(outcome).toMatchObject({
      status: 403,
      message: 'The security token included in the request is invalid.',
    });
  });

  it('refuses an unsigned upgrade 403 with Missing Authentication Token', async () => {
    const url = buildConnectUrl(bed.runtime.url, {
      group: 'web',
      namespace: NAMESPACE,
      ips: ['10.0.0.10'],
      labels: {},
    });
    const outcome = await openLink(
      url,
      {},
      { clock: systemClock, connectTimeoutMs: 5_000, replyTimeoutMs: 2_000 },
    ).catch((error: unknown) => error);

    expect(outcome).toMatchObject({ status: 403, message: 'Missing Authentication Token' });
  });

  it('accepts a correctly signed caller once its role is allowed', async () => {
    expect(await connectOnce(WEB_VM, '10.0.0.11')).toBe('open');
  });
});

describe('npm start --auth-mode iam', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'registrar-iam-callers-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  async function callersFile(): Promise<string> {
    const file = join(dir, 'callers.yaml');
    await writeFile(
      file,
      `- accessKeyId: ${WEB_VM.accessKeyId}\n  secretAccessKey: ${WEB_VM.secretAccessKey}\n  arn: ${WEB_VM.arn}\n`,
    );
    return file;
  }

  it('reads the callers from a YAML file', async () => {
    const file = await callersFile();

    const parsed = parseLocalOptions(
      ['--auth-mode', 'iam', '--iam-callers', file, '--instance-attestation', 'optional'],
      {},
    );

    expect(parsed).toMatchObject({
      kind: 'run',
      options: { authMode: 'iam', iamCallers: [WEB_VM], instanceAttestation: 'optional' },
    });
  });

  it('fails closed: refuses to start iam mode that does not say how documents are trusted, naming the flags', async () => {
    const file = await callersFile();

    expect(() => parseLocalOptions(['--auth-mode', 'iam', '--iam-callers', file], {})).toThrow(
      new OptionsError(IAM_NEEDS_TRUST),
    );
    expect(IAM_NEEDS_TRUST).toContain('--instance-identity-certs <pem file>');
    expect(IAM_NEEDS_TRUST).toContain('--instance-attestation optional');
  });

  it('takes REGISTRAR_INSTANCE_ATTESTATION=required alone as AWS certificates, documents required', async () => {
    const file = await callersFile();

    const parsed = parseLocalOptions(['--auth-mode', 'iam', '--iam-callers', file], {
      REGISTRAR_INSTANCE_ATTESTATION: 'required',
    });

    expect(parsed).toMatchObject({ kind: 'run', options: { instanceAttestation: 'required' } });
    expect(parsed.kind === 'run' && parsed.options.instanceIdentityCerts).toBeUndefined();
  });

  it('refuses an unknown attestation mode and one without iam mode, naming the flag', async () => {
    const file = await callersFile();
    expect(() =>
      parseLocalOptions(
        ['--auth-mode', 'iam', '--iam-callers', file, '--instance-attestation', 'maybe'],
        {},
      ),
    ).toThrow(
      new OptionsError("invalid --instance-attestation 'maybe': must be required or optional"),
    );
    expect(() => parseLocalOptions(['--instance-attestation', 'optional'], {})).toThrow(
      /--instance-attestation is used only with --auth-mode iam/,
    );
  });

  it('refuses iam mode without a callers file, naming the flag', () => {
    expect(() => parseLocalOptions([], { REGISTRAR_AUTH_MODE: 'iam' })).toThrow(
      /--auth-mode iam needs --iam-callers/,
    );
  });

  it('refuses an unknown auth mode, naming the variable and value', () => {
    expect(() => parseLocalOptions([], { REGISTRAR_AUTH_MODE: 'sigv4' })).toThrow(
      new OptionsError("invalid REGISTRAR_AUTH_MODE 'sigv4': must be token or iam"),
    );
  });

  it('refuses a callers file whose entry has no secret, naming the entry', async () => {
    const file = join(dir, 'bad.json');
    await writeFile(file, JSON.stringify([{ accessKeyId: 'AKID', arn: WEB_VM.arn }]));

    expect(() =>
      parseLocalOptions(
        ['--auth-mode', 'iam', '--iam-callers', file, '--instance-attestation', 'optional'],
        {},
      ),
    ).toThrow(/iamCallers\[0\]\.secretAccessKey must be a non-empty string/);
  });
});
