/**
 * The order in which a sweeper run serves the namespaces with due work in its first round
 * (lib/registration/sweep-deletions.ts): by name, rotated by `perRun` namespaces each sweep
 * interval (`slot`: the run's time in sweep intervals). When more namespaces have due work than
 * a run may serve (`perRun`, its deletions), consecutive runs take them in turn, so each is
 * served at least once every ceil(namespaces / perRun) runs, whatever backlog the others have.
 * Stateless: a run that is late, doubled or lost only shifts the turn; there is no cursor to
 * lose.
 */
export function inTurn<T extends { namespace: string }>(
  flows: readonly T[],
  perRun: number,
  slot: number,
): T[] {
  const sorted = [...flows].sort((a, b) => (a.namespace < b.namespace ? -1 : 1));
  if (sorted.length === 0) return sorted;
  const start = (((slot * Math.max(1, perRun)) % sorted.length) + sorted.length) % sorted.length;
  return [...sorted.slice(start), ...sorted.slice(0, start)];
}
