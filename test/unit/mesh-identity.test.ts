import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { IamPolicy } from '../../lib/auth/policy-store.ts';
import { ForbiddenError, NotRegisteredError } from '../../lib/domain/errors.ts';
import type { StoredToken } from '../../lib/domain/stored-token.ts';
import { buildBootstrap } from '../../lib/mesh-identity/bootstrap.ts';
import { checkCallerStanding, type StandingDeps } from '../../lib/mesh-identity/caller-standing.ts';
import { createKubeMeshIssuer } from '../../lib/mesh-identity/kube-mesh-issuer.ts';
import { readMeshSettings } from '../../lib/mesh-identity/mesh-settings.ts';
import { MeshSubject } from '../../lib/mesh-identity/mesh-subject.ts';
import {
  NoServiceAccountError,
  SidecarUnavailableError,
  sidecarBootstrapProblems,
} from '../../lib/protocol/sidecar-message.ts';
import { createTestSigner } from '../fixtures/instance-identity-signer.ts';
import {
  type KubeApiServerStandIn,
  startKubeApiServerStandIn,
} from '../fixtures/kube-apiserver-stand-in.ts';
import { entryRecord } from '../fixtures/projection-records.ts';

const REF = { namespace: 'shop', name: 'vm-1' };
const NOW = Date.parse('2026-03-01T12:00:00Z');

describe('MeshSubject: a held entry’s own service account, and nothing else', () => {
  it('is made for a connection that holds the entry', () => {
    const subject = MeshSubject.ofHeldEntry(entryRecord('vm-1'), REF, 'conn-1');
    expect(subject.username).toBe('system:serviceaccount:shop:cart');
    expect(MeshSubject.is(subject)).toBe(true);
  });

  it('refuses a connection that does not hold the entry, or an entry that is gone', () => {
    expect(() => MeshSubject.ofHeldEntry(entryRecord('vm-1'), REF, 'conn-2')).toThrow(
      NotRegisteredError,
    );
    expect(() => MeshSubject.ofHeldEntry(undefined, REF, 'conn-1')).toThrow(NotRegisteredError);
  });

  it('refuses an entry without a service account instead of minting one for default', () => {
    const record = entryRecord('vm-1');
    delete record.entry.spec.serviceAccount;
    expect(() => MeshSubject.ofHeldEntry(record, REF, 'conn-1')).toThrow(NoServiceAccountError);
  });

  it('is not a look-alike object', () => {
    const forged = { namespace: 'kube-system', serviceAccount: 'admin', entry: REF };
    expect(MeshSubject.is(forged)).toBe(false);
  });
});

describe('the Kubernetes issuer (against the kube-apiserver STAND-IN)', () => {
  let api: KubeApiServerStandIn;
  afterEach(async () => api.close());
  const issuerFor = (stand: KubeApiServerStandIn) => {
    const config = new KubeConfig();
    config.loadFromString(stand.kubeconfig);
    return createKubeMeshIssuer({ kubeConfig: async () => config });
  };

  it('mints for the subject’s service account, with the audience and lifetime asked', async () => {
    api = await startKubeApiServerStandIn();
    api.addServiceAccount('shop', 'cart');
    const subject = MeshSubject.ofHeldEntry(entryRecord('vm-1'), REF, 'conn-1');
    const minted = await issuerFor(api).mintToken(subject, 'istio-ca', 600);
    expect(api.issuedTokens()).toMatchObject([
      {
        namespace: 'shop',
        serviceAccount: 'cart',
        audiences: ['istio-ca'],
        expirationSeconds: 600,
      },
    ]);
    expect(minted.token).toBe(api.issuedTokens()[0]?.token);
  });

  it('refuses a forged subject before any request reaches the cluster', async () => {
    api = await startKubeApiServerStandIn();
    api.addServiceAccount('kube-system', 'admin');
    const forged = { namespace: 'kube-system', serviceAccount: 'admin' } as unknown as MeshSubject;
    await expect(issuerFor(api).mintToken(forged, 'istio-ca', 600)).rejects.toThrow(TypeError);
    expect(api.requests).toEqual([]);
  });

  it('says which service account is missing, and reads a missing root certificate as none', async () => {
    api = await startKubeApiServerStandIn();
    const subject = MeshSubject.ofHeldEntry(entryRecord('vm-1'), REF, 'conn-1');
    const issuer = issuerFor(api);
    await expect(issuer.mintToken(subject, 'istio-ca', 600)).rejects.toThrow(
      SidecarUnavailableError,
    );
    expect(await issuer.rootCert('shop')).toBeUndefined();
  });
});

describe('caller standing: checked again before each mint', () => {
  const token = (over: Partial<StoredToken> = {}): StoredToken => ({
    id: 't1',
    secretHash: 'x',
    namespace: 'shop',
    serviceAccount: 'cart',
    createdAt: NOW - 1000,
    expiresAt: NOW + 60_000,
    ...over,
  });
  const deps = (over: Partial<StandingDeps> = {}, stored?: StoredToken, policy?: IamPolicy) => ({
    authMode: 'token' as const,
    instanceAttestation: 'optional' as const,
    tokens: { getToken: async () => stored },
    policies: { getPolicy: async () => policy },
    ...over,
  });
  const record = entryRecord('vm-1');
  const subject = MeshSubject.ofHeldEntry(record, REF, 'conn-1');
  const caller = { tokenId: 't1', userArn: undefined };

  it('accepts a live token for the namespace and service account', async () => {
    await expect(
      checkCallerStanding(deps({}, token()), caller, record, subject, NOW),
    ).resolves.toBeUndefined();
  });

  it.each([
    ['revoked', token({ revokedAt: NOW - 1 }), 'was revoked'],
    ['expired', token({ expiresAt: NOW }), 'has expired'],
    ['for another service account', token({ serviceAccount: 'admin' }), 'not cart'],
    ['gone', undefined, 'no longer exists'],
  ])('refuses a token that is %s', async (_name, stored, why) => {
    await expect(
      checkCallerStanding(deps({}, stored), caller, record, subject, NOW),
    ).rejects.toThrow(why);
  });

  const session = 'arn:aws:sts::111122223333:assumed-role/web-vm/i-0123456789abcdef0';
  const policy: IamPolicy = {
    roleArn: 'arn:aws:iam::111122223333:role/web-vm',
    namespace: 'shop',
    createdAt: NOW,
  };
  const iam = (attestation: 'required' | 'optional', allowed: IamPolicy | undefined) =>
    deps({ authMode: 'iam', instanceAttestation: attestation }, undefined, allowed);
  const attested = {
    ...record,
    identity: { principal: session, namespace: 'shop', instanceId: 'i-0123456789abcdef0' },
    instanceId: 'i-0123456789abcdef0',
  };

  it('refuses an IAM caller whose allow rule was removed', async () => {
    await expect(
      checkCallerStanding(
        iam('optional', undefined),
        { tokenId: undefined, userArn: session },
        record,
        subject,
        NOW,
      ),
    ).rejects.toThrow(ForbiddenError);
  });

  it('with attestation required, mints only for the attested instance’s entry', async () => {
    const ask = { tokenId: undefined, userArn: session };
    await expect(
      checkCallerStanding(iam('required', policy), ask, attested, subject, NOW),
    ).resolves.toBeUndefined();
    // The entry's newest connect carried no verified document.
    await expect(
      checkCallerStanding(iam('required', policy), ask, record, subject, NOW),
    ).rejects.toThrow('verified instance identity document');
    // Another instance's session asking on the entry's behalf.
    const other = 'arn:aws:sts::111122223333:assumed-role/web-vm/i-0fedcba9876543210';
    await expect(
      checkCallerStanding(
        iam('required', policy),
        { tokenId: undefined, userArn: other },
        attested,
        subject,
        NOW,
      ),
    ).rejects.toThrow('is not the attested instance');
  });
});

describe('mesh settings', () => {
  it('defaults to istio-ca and one hour', () => {
    const settings = readMeshSettings({});
    expect(settings).toMatchObject({ tokenAudience: 'istio-ca', tokenLifetimeSeconds: 3600 });
  });

  it('refuses a lifetime over an hour or under the TokenRequest minimum, naming the variable', () => {
    for (const value of ['2h', '5m', 'soon']) {
      expect(() => readMeshSettings({ REGISTRAR_MESH_TOKEN_LIFETIME: value })).toThrow(
        `REGISTRAR_MESH_TOKEN_LIFETIME (value '${value}')`,
      );
    }
    expect(() => readMeshSettings({ REGISTRAR_MESH_ISTIOD_ADDRESS: 'istiod' })).toThrow(
      'REGISTRAR_MESH_ISTIOD_ADDRESS',
    );
    expect(() =>
      readMeshSettings({
        REGISTRAR_MESH_ROOT_CERT: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----',
      }),
    ).toThrow('not a PEM certificate');
  });
});

describe('the bootstrap an entry implies', () => {
  const settings = readMeshSettings({ REGISTRAR_MESH_ID: 'mesh1' });
  const source = {
    namespace: 'shop',
    group: 'web',
    serviceAccount: 'web',
    labels: { app: 'storefront', 'app.kubernetes.io/version': '2.1' },
    groupLabels: { app: 'storefront' },
    ports: { https: 8443, http: 8080 },
    network: 'vpc-1',
  };
  // A real certificate: the agent's allow list parses it (lib/protocol/sidecar-allow-list.ts).
  const pem = createTestSigner('istio root CA stand-in').certificatePem;

  it('carries what Istio derives, and nothing that makes istiod register or health-check it', () => {
    const bootstrap = buildBootstrap(source, settings, pem);
    expect(sidecarBootstrapProblems(bootstrap)).toEqual([]);
    expect(bootstrap.clusterEnv).toMatchObject({
      CANONICAL_SERVICE: 'storefront',
      CANONICAL_REVISION: '2.1',
      ISTIO_INBOUND_PORTS: '8080,8443',
      ISTIO_META_NETWORK: 'vpc-1',
      ISTIO_META_MESH_ID: 'mesh1',
      ISTIO_META_POD_PORTS:
        '[{"name":"http","containerPort":8080},{"name":"https","containerPort":8443}]',
    });
    expect(bootstrap.clusterEnv).not.toHaveProperty('ISTIO_META_AUTO_REGISTER_GROUP');
    expect(bootstrap.meshConfig.defaultConfig).not.toHaveProperty('readinessProbe');
    expect(bootstrap.hosts).toEqual([]);
  });

  it("names the canonical service from the group's labels, never from the entry's own", () => {
    // An entry an older release registered, whose agent labelled itself app=payments.
    const bootstrap = buildBootstrap(
      { ...source, labels: { app: 'payments', version: 'canary' }, groupLabels: {} },
      settings,
      pem,
    );
    expect(bootstrap.clusterEnv).toMatchObject({
      CANONICAL_SERVICE: 'web',
      CANONICAL_REVISION: 'canary',
    });
    expect(JSON.parse(bootstrap.clusterEnv.ISTIO_METAJSON_LABELS ?? '{}')).toMatchObject({
      'service.istio.io/canonical-name': 'web',
    });
    const fromGroup = buildBootstrap(
      {
        ...source,
        labels: { app: 'payments' },
        groupLabels: { 'app.kubernetes.io/name': 'shop-web' },
      },
      settings,
      pem,
    );
    expect(fromGroup.clusterEnv.CANONICAL_SERVICE).toBe('shop-web');
  });

  it('captures every inbound port when the template has none, and adds the istiod hosts line when told where', () => {
    const withIstiod = readMeshSettings({ REGISTRAR_MESH_ISTIOD_ADDRESS: '10.1.2.3' });
    const bootstrap = buildBootstrap({ ...source, ports: {} }, withIstiod, pem);
    expect(bootstrap.clusterEnv.ISTIO_INBOUND_PORTS).toBe('*');
    expect(bootstrap.hosts).toEqual([
      { address: '10.1.2.3', hostnames: ['istiod.istio-system.svc'] },
    ]);
  });
});
