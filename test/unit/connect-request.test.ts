import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '../../lib/domain/errors.ts';
import { MAX_IPS, parseConnectRequest } from '../../lib/protocol/connect-request.ts';

const GOOD = { group: 'web', namespace: 'shop', ip: '10.0.0.7' };

function refusal(
  query: Record<string, string>,
  multi?: Record<string, string[]>,
): InvalidRequestError {
  try {
    parseConnectRequest({
      queryStringParameters: query,
      multiValueQueryStringParameters: multi ?? null,
    });
  } catch (error) {
    if (error instanceof InvalidRequestError) return error;
    throw error;
  }
  throw new Error('expected the request to be refused');
}

describe('parseConnectRequest', () => {
  it('reads the required parameters', () => {
    expect(parseConnectRequest({ queryStringParameters: GOOD })).toEqual({
      group: 'web',
      namespace: 'shop',
      ips: ['10.0.0.7'],
      labels: {},
    });
  });

  it('reads repeated ip and label parameters from the multi-value map, in order', () => {
    const request = parseConnectRequest({
      queryStringParameters: { ...GOOD, ip: '2001:db8::7', label: 'version=v2' },
      multiValueQueryStringParameters: {
        group: ['web'],
        namespace: ['shop'],
        ip: ['10.0.0.7', '2001:db8::7'],
        label: ['app=web', 'example.com/tier=', 'version=v2'],
        network: ['vpc-1'],
        locality: ['us-east-1/us-east-1a'],
      },
    });
    expect(request).toEqual({
      group: 'web',
      namespace: 'shop',
      ips: ['10.0.0.7', '2001:db8::7'],
      labels: { app: 'web', 'example.com/tier': '', version: 'v2' },
      network: 'vpc-1',
      locality: 'us-east-1/us-east-1a',
    });
  });

  it('splits a label at the first = and refuses a value that contains another', () => {
    const request = parseConnectRequest({ queryStringParameters: { ...GOOD, label: 'app=a' } });
    expect(request.labels).toEqual({ app: 'a' });
    expect(refusal({ ...GOOD, label: 'app=a=b' }).message).toContain(
      "invalid value 'a=b' of label 'app'",
    );
  });

  it('treats an empty optional parameter as not given', () => {
    const request = parseConnectRequest({ queryStringParameters: { ...GOOD, network: '' } });
    expect(request).not.toHaveProperty('network');
  });

  it.each(['group', 'namespace', 'ip'] as const)(
    'names a missing %s and says how to connect',
    (field) => {
      const { [field]: _omitted, ...rest } = GOOD;
      const error = refusal(rest);
      expect(error.statusCode).toBe(400);
      expect(error.field).toBe(field);
      expect(error.message).toBe(
        `missing query parameter '${field}'; connect with ?group=<name>&namespace=<ns>&ip=<addr>`,
      );
    },
  );

  it('names the group and its value when it is not a DNS-1123 subdomain', () => {
    const error = refusal({ ...GOOD, group: 'Web_Server' });
    expect(error.field).toBe('group');
    expect(error.message).toMatch(/^invalid group 'Web_Server': must be a DNS-1123 subdomain/);
  });

  it('names the namespace and its value when it is not a DNS-1123 label', () => {
    const error = refusal({ ...GOOD, namespace: 'shop.eu' });
    expect(error.field).toBe('namespace');
    expect(error.message).toMatch(/^invalid namespace 'shop.eu'/);
  });

  it('names every invalid ip among several', () => {
    const error = refusal(GOOD, { ip: ['10.0.0.7', '10.0.0.300', 'fe80::1%eth0'] });
    expect(error.field).toBe('ip');
    expect(error.message).toContain("invalid ip '10.0.0.300'");
    expect(error.message).toContain("invalid ip 'fe80::1%eth0'");
  });

  it('refuses more ips than a VM plausibly has', () => {
    const ips = Array.from({ length: MAX_IPS + 1 }, (_, i) => `10.0.0.${i + 1}`);
    expect(refusal(GOOD, { ip: ips }).message).toMatch(/too many ip parameters/);
  });

  it('names the locality and its value when it has more than region/zone/subzone', () => {
    const error = refusal({ ...GOOD, locality: 'a/b/c/d' });
    expect(error.field).toBe('locality');
    expect(error.message).toMatch(/^invalid locality 'a\/b\/c\/d'/);
  });

  it('names the network and its value when it has characters a name cannot carry', () => {
    const error = refusal({ ...GOOD, network: 'vpc 1' });
    expect(error.field).toBe('network');
    expect(error.message).toContain("invalid network 'vpc 1'");
  });

  it('refuses a label without =', () => {
    const error = refusal({ ...GOOD, label: 'app' });
    expect(error.field).toBe('label');
    expect(error.message).toContain("invalid label 'app': must be <key>=<value>");
  });

  it('names an invalid label key', () => {
    expect(refusal({ ...GOOD, label: 'bad key=v' }).message).toContain(
      "invalid label key 'bad key'",
    );
  });

  it('names an invalid label value', () => {
    expect(refusal({ ...GOOD, label: 'app=-web' }).message).toContain(
      "invalid value '-web' of label 'app'",
    );
  });

  it('refuses the same label key twice', () => {
    const error = refusal(GOOD, { label: ['app=a', 'app=b'] });
    expect(error.message).toContain("label 'app' given more than once");
  });

  it('refuses a single-valued parameter given twice', () => {
    const error = refusal(GOOD, { group: ['web', 'api'] });
    expect(error.field).toBe('group');
    expect(error.message).toContain("query parameter 'group' given 2 times");
  });

  it('names every bad field at once and says how to connect only once', () => {
    const error = refusal({ namespace: 'Shop', ip: 'nope' });
    expect(error.message).toContain("missing query parameter 'group'");
    expect(error.message).toContain("invalid namespace 'Shop'");
    expect(error.message).toContain("invalid ip 'nope'");
    expect(error.message.match(/connect with/g)).toHaveLength(1);
  });

  it('shortens a very long value in the message', () => {
    const error = refusal({ ...GOOD, group: 'X'.repeat(5000) });
    expect(error.message.length).toBeLessThan(300);
  });

  it("reads the agent's version", () => {
    expect(
      parseConnectRequest({ queryStringParameters: { ...GOOD, agentVersion: '0.2.0-dev' } }),
    ).toMatchObject({ agentVersion: '0.2.0-dev' });
  });

  it('leaves the version out when the agent sends none (a 0.1 agent)', () => {
    expect(parseConnectRequest({ queryStringParameters: GOOD })).not.toHaveProperty('agentVersion');
  });

  it('names agentVersion and its value when it is not a semantic version', () => {
    const error = refusal({ ...GOOD, agentVersion: 'latest' });
    expect(error.field).toBe('agentVersion');
    expect(error.message).toBe(
      "invalid agentVersion 'latest': must be a semantic version such as 0.2.0 (at most 64 characters)",
    );
  });

  it('ignores parameters it does not know: a newer agent adds them, an older registrar skips them', () => {
    expect(
      parseConnectRequest({
        queryStringParameters: { ...GOOD, futureField: 'x' },
        multiValueQueryStringParameters: { ...multi(GOOD), futureField: ['x', 'y'] },
      }),
    ).toEqual({ group: 'web', namespace: 'shop', ips: ['10.0.0.7'], labels: {} });
  });
});

function multi(query: Record<string, string>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(query).map(([key, value]) => [key, [value]]));
}
