/**
 * The registrar's floor for a heartbeat interval (lib/domain/heartbeat.ts): a reply that names
 * a shorter one is not followed, so a faulty or hostile reply cannot make the agent flood its
 * connection with pings.
 */
const SHORTEST_MS = 5_000;

/**
 * How often the agent pings: the interval its registrar names in the `describe` reply
 * (`heartbeat.intervalSeconds`, the group's heartbeat), or the configured one when it is
 * shorter or the reply names none (an older registrar). A value that is not a number of
 * seconds from 5 s to the configured interval is ignored: the configured interval stays.
 */
export function pingIntervalMs(heartbeat: unknown, configuredMs: number): number {
  const seconds = (heartbeat as { intervalSeconds?: unknown } | null | undefined)?.intervalSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return configuredMs;
  const ms = Math.round(seconds * 1000);
  return ms >= SHORTEST_MS && ms < configuredMs ? ms : configuredMs;
}
