import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AGENT_SETTINGS } from '../../agent/settings.ts';

/** `registrar-agent` as a user runs it: the process, its output and its exit status. */
function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, ['bin/registrar-agent.js', ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ...env },
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };

describe('registrar-agent program', () => {
  it('prints registrar-agent <version> for --version and exits 0', () => {
    expect(run(['--version'])).toEqual({
      code: 0,
      stdout: `registrar-agent ${version}\n`,
      stderr: '',
    });
  });

  it('lists every setting for --help and exits 0', () => {
    const { code, stdout } = run(['--help']);
    expect(code).toBe(0);
    for (const setting of AGENT_SETTINGS) {
      if (setting.flag) expect(stdout).toContain(`--${setting.flag}`);
      expect(stdout).toContain(setting.env);
    }
  });

  it('exits 2 with the reason when --no-imds comes without --ip (a configuration error)', () => {
    const { code, stderr } = run(
      ['--url', 'ws://127.0.0.1:1', '--group', 'web', '--namespace', 'shop', '--no-imds'],
      { REGISTRAR_AGENT_TOKEN: 'x' },
    );
    expect(code).toBe(2);
    expect(stderr).toBe(
      "registrar-agent: --no-imds needs --ip <address> (or REGISTRAR_AGENT_IP): without the instance metadata service the agent cannot discover this VM's address\n",
    );
  });

  it('exits 2 before sending its token when --url is ws:// to a host that is not loopback', () => {
    const args = ['--url', 'ws://10.255.255.1:8080', '--group', 'web', '--namespace', 'shop'];
    const { code, stderr } = run([...args, '--no-imds', '--ip', '10.0.0.12'], {
      REGISTRAR_AGENT_TOKEN: 'wrt.secret.token',
    });
    expect(code).toBe(2);
    expect(stderr).toContain("--url 'ws://10.255.255.1:8080' is ws:// to 10.255.255.1");
    expect(stderr).toContain('pass --insecure');
    expect(stderr).not.toContain('wrt.secret.token');
  });
});
