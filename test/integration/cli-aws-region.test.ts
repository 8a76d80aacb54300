import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Which AWS Region the CLI sends a command to when none is given on its command line: the
 * AWS profile's, as the AWS CLI, the SDK and cdk use. The real `registrar` program runs with a
 * fake HOME whose ~/.aws/config names the regions; this machine has no route to AWS, so the
 * request fails at the DNS lookup of the Region's endpoint, which is what the test reads.
 */

const run = promisify(execFile);
const bin = join(import.meta.dirname, '../../bin/registrar.js');
let home: string;

async function registrar(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: home, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'registrar-aws-home-'));
  await mkdir(join(home, '.aws'));
  await writeFile(
    join(home, '.aws', 'config'),
    '[default]\nregion = eu-west-1\n\n[profile mumbai]\nregion = ap-south-1\n',
  );
  await writeFile(
    join(home, '.aws', 'credentials'),
    '[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = example\n\n' +
      '[mumbai]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = example\n',
  );
});

afterAll(async () => {
  await rm(home, { recursive: true, force: true });
});

describe('the AWS Region of a command against a deployed table', () => {
  it("is the default profile's region when no flag or variable names one", async () => {
    const result = await registrar(['get', 'we', '-n', 'shop', '--table', 'registry'], {});

    expect(result.code).toBe(1);
    expect(result.stderr).toContain('dynamodb.eu-west-1.amazonaws.com');
    expect(result.stderr).not.toContain('us-east-1');
  });

  it("is AWS_PROFILE's region", async () => {
    const result = await registrar(['get', 'we', '-n', 'shop', '--table', 'registry'], {
      AWS_PROFILE: 'mumbai',
    });

    expect(result.stderr).toContain('dynamodb.ap-south-1.amazonaws.com');
  });

  it('is --region or AWS_REGION over the profile', async () => {
    const flag = await registrar(
      ['get', 'we', '-n', 'shop', '--table', 'registry', '--region', 'sa-east-1'],
      { AWS_REGION: 'ca-central-1' },
    );
    const variable = await registrar(['get', 'we', '-n', 'shop', '--table', 'registry'], {
      AWS_REGION: 'ca-central-1',
    });

    expect(flag.stderr).toContain('dynamodb.sa-east-1.amazonaws.com');
    expect(variable.stderr).toContain('dynamodb.ca-central-1.amazonaws.com');
  });

  it('is refused, naming how to set one, when no profile names a region', async () => {
    const result = await registrar(['get', 'we', '-n', 'shop', '--table', 'registry'], {
      AWS_CONFIG_FILE: join(home, 'none'),
    });

    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "error: no AWS region for table 'registry' (from --table): pass --region <region>, " +
        "set AWS_REGION, or set 'region' in your AWS profile (aws configure set region <region>)\n",
    });
  });
});
