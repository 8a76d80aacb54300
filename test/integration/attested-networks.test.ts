import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { systemClock } from '../../agent/clock.ts';
import { buildConnectUrl } from '../../agent/connect-url.ts';
import { type AgentLink as Link, openLink, RefusedError } from '../../agent/connection.ts';
import { presignConnectUrl } from '../../agent/sigv4.ts';
import { parseLocalOptions } from '../../infra/local/options.ts';
import type { IamCallerCredentials } from '../../infra/local/sigv4-verifier.ts';
import { evidenceHeaders } from '../../lib/protocol/identity-evidence.ts';
import { waitFor } from '../fixtures/agent-targets.ts';
import { type AgentTestbed, startAgentTestbed } from '../fixtures/agent-testbed.ts';
import { createTestSigner, identityDocument } from '../fixtures/instance-identity-signer.ts';

/**
 * A network cannot be turned against another namespace (issue 22, item 2). Two EC2 instances
 * in two VPCs whose private ranges overlap, each with its own genuine, AWS-signed identity
 * document for the same private IP, one allowed in `prod`, one in `evil`: the attacker names
 * `prod`'s network. Played on the local runtime as `npm start -- --auth-mode iam --iam-callers
 * F --instance-identity-certs <pem>` (EC2's key replaced by a test key), with the agent's own
 * SigV4 signer and connection code.
 */
const ACCOUNT = '000000000000';
const PROD_ROLE = `arn:aws:iam::${ACCOUNT}:role/prod-vm`;
const EVIL_ROLE = `arn:aws:iam::${ACCOUNT}:role/evil-vm`;
const PROD_INSTANCE = 'i-0aaaaaaaaaaaaaaa1';
const EVIL_INSTANCE = 'i-0eeeeeeeeeeeeeee1';
const PROD: IamCallerCredentials = {
  accessKeyId: 'AKIDPRODVM',
  secretAccessKey: 'prod-secret',
  arn: `arn:aws:sts::${ACCOUNT}:assumed-role/prod-vm/${PROD_INSTANCE}`,
};
const EVIL: IamCallerCredentials = {
  accessKeyId: 'AKIDEVILVM',
  secretAccessKey: 'evil-secret',
  arn: `arn:aws:sts::${ACCOUNT}:assumed-role/evil-vm/${EVIL_INSTANCE}`,
};
/** The private IP both documents carry (10.0.0.0/16 in both VPCs). */
const SHARED_IP = '10.0.5.5';

const signer = createTestSigner();
let dir: string;
let bed: AgentTestbed;
const links: Link[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'registrar-attested-networks-'));
  const certs = join(dir, 'certs.pem');
  const callers = join(dir, 'callers.json');
  await writeFile(certs, signer.certificatePem);
  await writeFile(callers, JSON.stringify([PROD, EVIL]));
  const parsed = parseLocalOptions(
    ['--auth-mode', 'iam', '--iam-callers', callers, '--instance-identity-certs', certs],
    {},
  );
  if (parsed.kind !== 'run') throw new Error('expected runtime options');
  bed = await startAgentTestbed({
    ...parsed.options,
    port: 0,
    functionEnv: { REGISTRAR_GROUP_CACHE_TTL: '0s', REGISTRAR_NAMESPACE_SETTINGS_CACHE: '1ms' },
  });
  for (const namespace of ['prod', 'evil']) {
    await bed.registry.applyGroup({
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'web', namespace },
      spec: { template: { ports: { http: 8080 } } },
    });
  }
  await cli('policy', 'allow', '--role-arn', PROD_ROLE, '-n', 'prod');
  await cli('policy', 'allow', '--role-arn', EVIL_ROLE, '-n', 'evil');
});
afterEach(async () => {
  await Promise.all(links.splice(0).map((link) => link.close('done').catch(() => undefined)));
});
afterAll(async () => {
  await bed?.close();
  await rm(dir, { recursive: true, force: true });
});

async function cli(...args: string[]) {
  const run = await bed.cli(args);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout;
}

/** One signed upgrade as `caller`, with its instance's own document: open, or the refusal. */
async function connectAs(
  caller: IamCallerCredentials,
  namespace: string,
  network: string,
): Promise<Link | RefusedError> {
  const instanceId = caller === PROD ? PROD_INSTANCE : EVIL_INSTANCE;
  const document = identityDocument({
    instanceId,
    privateIp: SHARED_IP,
    availabilityZone: 'us-east-1a',
    accountId: ACCOUNT,
  });
  const url = buildConnectUrl(bed.runtime.url, {
    group: 'web',
    namespace,
    ips: [SHARED_IP],
    network,
    labels: {},
  });
  const signed = await presignConnectUrl(url, { region: 'us-east-1', credentials: caller });
  try {
    const link = await openLink(
      signed,
      evidenceHeaders(Buffer.from(document), signer.sign(document)),
      { clock: systemClock, connectTimeoutMs: 5_000, replyTimeoutMs: 2_000 },
    );
    links.push(link);
    return link;
  } catch (error) {
    if (error instanceof RefusedError) return error;
    throw error;
  }
}

const PROD_ENTRY = { namespace: 'prod', name: `web-${SHARED_IP}-vpc-prod` };

describe("an attested claimant naming another namespace's network", () => {
  it("is refused 409 while that namespace's VM is connected; the entry stays and records the conflict", async () => {
    expect(await connectAs(PROD, 'prod', 'vpc-prod')).not.toBeInstanceOf(RefusedError);

    const attack = await connectAs(EVIL, 'evil', 'vpc-prod');

    expect(attack).toBeInstanceOf(RefusedError);
    expect(attack).toMatchObject({ status: 409, code: 'AddressInUse' });
    expect((attack as RefusedError).message).toContain(
      `address ${SHARED_IP} in network 'vpc-prod' is held by a WorkloadEntry of another namespace, whose VM is connected`,
    );
    const held = await bed.registry.getEntry(PROD_ENTRY);
    expect(held?.connection?.connectedAt).toBeDefined();
    expect(held?.identity?.instanceId).toBe(PROD_INSTANCE);
    expect(held?.addressConflict?.claimant).toBe(`evil/web-${SHARED_IP}-vpc-prod`);
    expect(
      await bed.registry.getEntry({ namespace: 'evil', name: `web-${SHARED_IP}-vpc-prod` }),
    ).toBeUndefined();
  });

  it("does not delete that namespace's entry while its VM is away either: the grace period runs", async () => {
    const prod = await connectAs(PROD, 'prod', 'vpc-prod');
    expect(prod).not.toBeInstanceOf(RefusedError);
    await (prod as Link).close('done');
    await waitFor(
      async () => (await bed.registry.getEntry(PROD_ENTRY))?.connection?.disconnectedAt,
      'the prod VM disconnected',
    );

    const attack = await connectAs(EVIL, 'evil', 'vpc-prod');

    expect(attack).toMatchObject({ status: 409, code: 'AddressInUse' });
    expect(await bed.registry.getEntry(PROD_ENTRY)).toBeDefined();
    // prod's VM comes back to its own entry.
    expect(await connectAs(PROD, 'prod', 'vpc-prod')).not.toBeInstanceOf(RefusedError);
  });

  it('is accepted in its own network: one IP in two networks is two addresses', async () => {
    expect(await connectAs(PROD, 'prod', 'vpc-prod')).not.toBeInstanceOf(RefusedError);
    expect(await connectAs(EVIL, 'evil', 'vpc-evil')).not.toBeInstanceOf(RefusedError);
  });

  it('is refused 403 naming the network once the operator binds the namespace to its own', async () => {
    await cli('namespace', 'set', '-n', 'evil', '--networks', 'vpc-evil');

    const attack = await connectAs(EVIL, 'evil', 'vpc-prod');

    expect(attack).toMatchObject({ status: 403, code: 'NetworkNotAllowed' });
    expect((attack as RefusedError).message).toContain(
      "network 'vpc-prod' is not allowed for namespace 'evil' (allowed: vpc-evil)",
    );
    expect(await connectAs(EVIL, 'evil', 'vpc-evil')).not.toBeInstanceOf(RefusedError);
    await cli('namespace', 'reset', '-n', 'evil');
  });

  it("is refused 403 when the role's policy names other networks", async () => {
    await cli('policy', 'allow', '--role-arn', EVIL_ROLE, '-n', 'evil', '--networks', 'vpc-evil');

    const attack = await connectAs(EVIL, 'evil', 'vpc-prod');

    expect(attack).toMatchObject({ status: 403, code: 'NetworkNotAllowed' });
    expect((attack as RefusedError).message).toContain(
      `network 'vpc-prod' is not allowed for role ${EVIL_ROLE} in namespace 'evil' (allowed: vpc-evil); connect with ?network=<one of them>, or allow it with: registrar policy allow --role-arn ${EVIL_ROLE} -n evil --networks vpc-evil,vpc-prod`,
    );
    await cli('policy', 'allow', '--role-arn', EVIL_ROLE, '-n', 'evil');
  });
});
