import { lookupUser, type Owner } from '../system-users.ts';

/** The probe user, or an error that says how to fix it. */
async function resolveProbeUser(user: string, passwd: string): Promise<Owner> {
  const found = await lookupUser(user, passwd);
  if (found) return found;
  throw new Error(
    `probeUser '${user}' is not a user of this system (${passwd}); create it or set --probe-user`,
  );
}

/**
 * Who an `exec` probe runs as. The probe's command comes from the WorkloadGroup, so whoever may
 * edit the group in its namespace chooses it: it must never run as root, and never as a user
 * whose files root reads (docs/security.md, "The VM side").
 *
 * - The agent runs as root (started by hand): the probe runs as `probeUser` (default `nobody`),
 *   with no supplementary groups (Node drops them when it switches users).
 * - The agent runs as its own user (the packaged unit): it cannot switch users without a
 *   capability that amounts to root, so the probe runs as the agent's user; `probeUser`, when
 *   set, must name that user.
 * - With `--sidecar`, the agent's user writes cluster.env, which root sources: a probe running
 *   as that user could rewrite it and become root at istio's next start. Such a probe is not
 *   run; it reports unhealthy with the reason (use httpGet or tcpSocket).
 */
export type ExecPolicy = { runAs: Owner | undefined } | { refused: string };

export const DEFAULT_PROBE_USER = 'nobody';

export async function execPolicy(
  options: { probeUser: string | undefined; sidecar: boolean },
  euid: number = process.geteuid?.() ?? 0,
  passwd = '/etc/passwd',
): Promise<ExecPolicy> {
  if (euid === 0) {
    const runAs = await resolveProbeUser(options.probeUser ?? DEFAULT_PROBE_USER, passwd);
    if (runAs.uid === 0) {
      return {
        refused: `exec probes never run as root; probeUser '${options.probeUser}' is uid 0`,
      };
    }
    return { runAs };
  }
  if (options.probeUser !== undefined) {
    const wanted = await resolveProbeUser(options.probeUser, passwd);
    if (wanted.uid !== euid) {
      throw new Error(
        `probeUser '${options.probeUser}' (uid ${wanted.uid}) is not the agent's own user (uid ${euid}): only an agent started as root can run probes as another user; unset probeUser`,
      );
    }
  }
  if (options.sidecar) {
    return {
      refused:
        "exec probes do not run with --sidecar: they would run as the agent's own user, which writes cluster.env for root; use an httpGet or tcpSocket probe",
    };
  }
  return { runAs: undefined };
}
