import { execFile } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readAgentFiles } from '../../packaging/agent-files.ts';
import { ISTIO_UNIT_TEXT } from '../fixtures/istio-stand-in.ts';
import { istioExecLines } from '../fixtures/istio-unit-stand-in.ts';
import { SIDECAR_LINKS } from '../fixtures/sidecar-root-steps.ts';

/**
 * The drop-ins that run the sidecar's check and repair (packaging/registrar-agent-istio-guard.conf
 * for Istio's istio.service, packaging/registrar-agent-sidecar.conf for the agent's unit): what
 * they run, in which order, and that systemd reads them as written (systemd-analyze verify, on
 * a root where Istio's unit is the STAND-IN of test/fixtures/istio-stand-in.ts); and that the
 * packages install what they run and docs/agent.md links what they are.
 */
const run = promisify(execFile);
const REPO = new URL('../../', import.meta.url).pathname;
const GUARD = readFileSync(join(REPO, 'packaging/registrar-agent-istio-guard.conf'), 'utf8');
const AGENT_DROP_IN = readFileSync(join(REPO, 'packaging/registrar-agent-sidecar.conf'), 'utf8');
const CHECK = '/opt/registrar-agent/istio-sidecar-check.sh';
const REPAIR = '/opt/registrar-agent/istio-sidecar-repair.sh';

describe('the drop-in on istio.service', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'istio-guard-'));
    const put = (path: string, text: string, mode = 0o644) => {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
      chmodSync(join(root, path), mode);
    };
    put('/lib/systemd/system/istio.service', ISTIO_UNIT_TEXT);
    put('/etc/systemd/system/istio.service.d/registrar-agent-guard.conf', GUARD);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('repairs, then checks, before every start, and runs Istio’s clean-up only through the check', () => {
    expect(istioExecLines(root)).toEqual({
      pre: [REPAIR, CHECK],
      start: ['/usr/local/bin/istio-start.sh'],
      // Istio's own `istio-start.sh clean` is cleared: systemd runs ExecStopPost= after a start
      // that failed, and it sources the same files as root.
      'stop-post': [`${CHECK} -- /usr/local/bin/istio-start.sh clean`],
    });
    // No `-`: a failed repair or check fails the start.
    expect(GUARD).not.toMatch(/^ExecStartPre=-/m);
  });

  // systemd's own reading of the unit and the drop-in, under a root that has systemd's units
  // (for the default dependencies) and the programs the lines name: an unknown key or a
  // program that is not there is reported (both tried below).
  it.skipIf(!existsSync('/usr/bin/systemd-analyze') || !existsSync('/usr/lib/systemd/system'))(
    'is a drop-in systemd accepts as written (systemd-analyze verify)',
    async () => {
      cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true });
      for (const program of ['/usr/local/bin/istio-start.sh', CHECK, REPAIR]) {
        mkdirSync(dirname(join(root, program)), { recursive: true });
        writeFileSync(join(root, program), '#!/bin/sh\n');
        chmodSync(join(root, program), 0o755);
      }
      const verify = () =>
        run('systemd-analyze', ['verify', `--root=${root}`, '--man=no', 'istio.service']).then(
          ({ stdout, stderr }) => `${stdout}${stderr}`,
          (error: { stdout: string; stderr: string }) => `${error.stdout}${error.stderr}`,
        );
      expect(await verify()).toBe('');
      rmSync(join(root, CHECK));
      writeFileSync(
        join(root, 'etc/systemd/system/istio.service.d/registrar-agent-guard.conf'),
        `${GUARD}ExecStartPre=/bin/true\nBogus=1\n`,
      );
      const said = await verify();
      expect(said).toContain("Unknown key 'Bogus'");
      expect(said).toContain(`Command ${CHECK} is not executable`);
    },
  );
});

// The agent's unit with the sidecar's drop-in, read by systemd as the istio guard above is.
it.skipIf(!existsSync('/usr/bin/systemd-analyze') || !existsSync('/usr/lib/systemd/system'))(
  'the agent’s unit with its --sidecar drop-in is one systemd accepts as written (systemd-analyze verify)',
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'agent-sidecar-unit-'));
    try {
      cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true });
      const put = (path: string, text: string, mode = 0o644) => {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), text);
        chmodSync(join(root, path), mode);
      };
      put(
        '/usr/lib/systemd/system/registrar-agent.service',
        readFileSync(join(REPO, 'packaging/registrar-agent.service'), 'utf8'),
      );
      put('/etc/systemd/system/registrar-agent.service.d/sidecar.conf', AGENT_DROP_IN);
      for (const program of ['/opt/registrar-agent/registrar-agent', '/bin/sh', CHECK])
        put(program, '#!/bin/sh\n', 0o755);
      const { stdout, stderr } = await run('systemd-analyze', [
        'verify',
        `--root=${root}`,
        '--man=no',
        'registrar-agent.service',
      ]).catch((error: { stdout: string; stderr: string }) => error);
      expect(`${stdout}${stderr}`).toBe('');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
);

describe('the sidecar’s root steps, installed and linked', () => {
  const installed = new Map(readAgentFiles(REPO).map((path) => [path.target, path]));

  it('the packages install the check and the repair as root’s programs, and each file the links point to', () => {
    for (const program of [CHECK, REPAIR]) {
      expect(installed.get(program)?.mode, program).toBe(0o755);
      expect(installed.get(program)?.user, program).toBe('root');
    }
    for (const [, target] of SIDECAR_LINKS) {
      expect(installed.get(target)?.mode, target).toBe(0o644);
    }
  });

  it('the agent checks at its own start, as its own user, and starts whatever the check says', () => {
    // `-` and no `+`: no root, and the agent's start does not depend on Istio's files.
    expect(AGENT_DROP_IN).toMatch(new RegExp(`^ExecStartPre=-${CHECK}$`, 'm'));
  });

  it('docs/agent.md links each of them where the tests link them, and runs the repair', () => {
    const docs = readFileSync(join(REPO, 'docs/agent.md'), 'utf8');
    for (const [link, target] of SIDECAR_LINKS) {
      expect(docs).toContain(`sudo ln -sf ${target} ${link}`);
    }
    expect(docs).toContain(`sudo ${REPAIR}`);
  });

  it('the check names the installed repair as the command that repairs', () => {
    const check = readFileSync(join(REPO, 'packaging/istio-sidecar-check.sh'), 'utf8');
    expect(check).toContain(`repair="${REPAIR}\${root:+ --root=$root}"`);
  });
});
