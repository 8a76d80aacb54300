import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../agent/config.ts';
import { execProbe } from '../../agent/probes/exec-probe.ts';
import { createProbeCheck, probeSettings } from '../../agent/probes/probe-runner.ts';
import { execPolicy } from '../../agent/probes/probe-user.ts';

/**
 * The attacker may edit a WorkloadGroup in its namespace, so it writes the `exec` probe's
 * command that every VM of the group runs. It must not get root on those VMs, nor the
 * agent's join token, nor (with --sidecar) the user whose cluster.env root sources.
 */
const isRoot = process.geteuid?.() === 0;
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'probe-user-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The command's output, as the unhealthy result carries it. */
async function outputOf(command: string, runAs?: { uid: number; gid: number }) {
  const result = await execProbe({ command: ['sh', '-c', `${command}; exit 1`] }, 5_000, runAs);
  return result.message.replace(/^exec probe sh exited 1: ?/, '');
}

describe('an exec probe written by a group editor', () => {
  it.skipIf(!isRoot)(
    'runs as nobody, without root’s groups, when the agent runs as root (skipped unless root)',
    async () => {
      const policy = await execPolicy({ probeUser: undefined, sidecar: false });
      expect(policy).toEqual({ runAs: { uid: 65534, gid: 65534 } });
      const runAs = 'runAs' in policy ? policy.runAs : undefined;
      expect(await outputOf('id -u; id -G', runAs)).toBe('65534\n65534');
    },
  );

  it('does not see the agent’s join token or AWS credentials in its environment', async () => {
    process.env.REGISTRAR_AGENT_TOKEN = 'jt_secret_value';
    process.env.AWS_SECRET_ACCESS_KEY = 'aws_secret_value';
    try {
      // Only these two: a probe's output is cut at 512 characters.
      const seen = await outputOf('echo "[$REGISTRAR_AGENT_TOKEN][$AWS_SECRET_ACCESS_KEY]"');
      expect(seen).toBe('[][]');
    } finally {
      delete process.env.REGISTRAR_AGENT_TOKEN;
      delete process.env.AWS_SECRET_ACCESS_KEY;
    }
  });

  it('is never run with --sidecar by an agent that runs as its own user, and says why', async () => {
    const policy = await execPolicy({ probeUser: undefined, sidecar: true }, 4001);
    const marker = join(dir, 'ran');
    const check = createProbeCheck(
      { exec: { command: ['touch', marker] } },
      probeSettings({}),
      policy,
    );
    const result = await check?.();
    expect(result).toEqual({
      ok: false,
      message:
        "exec probes do not run with --sidecar: they would run as the agent's own user, which writes cluster.env for root; use an httpGet or tcpSocket probe",
    });
    await expect(stat(marker)).rejects.toThrow();
  });

  it('runs as the agent’s own user without --sidecar when the agent is not root', async () => {
    expect(await execPolicy({ probeUser: undefined, sidecar: false }, 4001)).toEqual({
      runAs: undefined,
    });
  });

  it('refuses a probe user an unprivileged agent cannot become, naming it', async () => {
    await expect(execPolicy({ probeUser: 'nobody', sidecar: false }, 4001)).rejects.toThrow(
      "probeUser 'nobody' (uid 65534) is not the agent's own user (uid 4001)",
    );
  });

  it('names a probe user this system does not have, and how to fix it', async () => {
    const passwd = join(dir, 'passwd');
    await writeFile(passwd, 'root:x:0:0::/root:/bin/sh\n');
    await expect(execPolicy({ probeUser: 'checks', sidecar: false }, 0, passwd)).rejects.toThrow(
      `probeUser 'checks' is not a user of this system (${passwd}); create it or set --probe-user`,
    );
  });

  it('never runs as a user whose uid is 0, whatever its name', async () => {
    const passwd = join(dir, 'passwd');
    await writeFile(passwd, 'toor:x:0:0:root again:/root:/bin/sh\n');
    expect(await execPolicy({ probeUser: 'toor', sidecar: false }, 0, passwd)).toEqual({
      refused: "exec probes never run as root; probeUser 'toor' is uid 0",
    });
  });

  it.each(['root', '0', '0:0'])(
    'refuses probeUser %s in the configuration, naming the setting',
    (user) => {
      expect(() =>
        loadAgentConfig(
          [
            '--url',
            'ws://127.0.0.1:1',
            '--group',
            'web',
            '--namespace',
            'shop',
            '--ip',
            '10.0.0.1',
            '--no-imds',
            '--probe-user',
            user,
          ],
          {
            REGISTRAR_AGENT_TOKEN: 't',
          },
        ),
      ).toThrow(
        `probeUser (from --probe-user): must be a user name, a uid or uid:gid other than root, got '${user}'`,
      );
    },
  );
});
