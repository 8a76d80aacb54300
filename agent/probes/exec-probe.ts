import { spawn } from 'node:child_process';
import type { Probe } from '../../lib/domain/model.ts';
import type { Owner } from '../system-users.ts';
import { type ProbeResult, seconds } from './probe-result.ts';

export type ExecAction = NonNullable<Probe['exec']>;

// Enough output to explain a failure in the entry's condition; the rest is dropped.
const MAX_OUTPUT = 512;

/**
 * What a probe's command sees of the agent's environment: a search path and nothing else, so
 * that a command written by a group's editor cannot read the agent's join token
 * (`REGISTRAR_AGENT_TOKEN`) or AWS credentials from it.
 */
const PROBE_ENV = Object.freeze({
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  HOME: '/',
});

/**
 * Kubernetes exec semantics: healthy when the command exits 0 within the timeout. The command
 * runs directly (no shell), as in Kubernetes; a probe that needs a shell says `sh -c ...`.
 * On timeout the process is killed (SIGKILL) so that a hung check cannot pile up processes.
 * `runAs` (an agent started as root, agent/probes/probe-user.ts): the user and group it runs
 * as; Node's spawn then also drops the supplementary groups.
 */
export function execProbe(
  action: ExecAction,
  timeoutMs: number,
  runAs?: Owner,
): Promise<ProbeResult> {
  const [command, ...args] = action.command;
  if (command === undefined)
    return Promise.resolve({ ok: false, message: 'exec probe has an empty command' });
  return new Promise((resolve) => {
    let output = '';
    let settled = false;
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: PROBE_ENV,
      cwd: '/',
      ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
    });
    const collect = (chunk: Buffer) => {
      if (output.length < MAX_OUTPUT)
        output = (output + chunk.toString('utf8')).slice(0, MAX_OUTPUT);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const finish = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish({ ok: false, message: `exec probe ${command} timed out after ${seconds(timeoutMs)}` });
    }, timeoutMs);
    child.once('error', (error: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        message: `exec probe ${command} could not start: ${error.code ?? error.message}`,
      }),
    );
    child.once('close', (code, signal) => {
      const detail = output.trim() ? `: ${output.trim()}` : '';
      finish(
        code === 0
          ? { ok: true, message: `exec probe ${command} exited 0` }
          : {
              ok: false,
              message: `exec probe ${command} ${signal ? `killed by ${signal}` : `exited ${code}`}${detail}`,
            },
      );
    });
  });
}
