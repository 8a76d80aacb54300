/**
 * The local stand-in for the EventBridge schedule: runs the sweeper once at start (entries left
 * from the previous run may be due), then every interval. A run still going when the next is
 * due is not doubled up (the schedule on AWS is sized the same way: runs never overlap), but
 * the tick it missed is not lost either: the next run starts as soon as that one ends. A run's
 * deletions last at most one interval (lib/registration/sweep-deletions.ts), so it usually
 * ends just after the tick it overran; waiting for the tick after that would leave a VM that
 * became due meanwhile up to two intervals behind another namespace's backlog, not one.
 */
export interface SweepTimer {
  /** Stops the schedule and waits for a run in progress. */
  stop(): Promise<void>;
}

export async function startSweepTimer(
  run: () => Promise<unknown>,
  intervalMs: number,
  onError: (error: unknown) => void,
  options: { firstRunAfterMs?: number } = {},
): Promise<SweepTimer> {
  let running: Promise<void> | undefined;
  let missed = false;
  let stopped = false;
  const tick = (): Promise<void> => {
    if (running) {
      missed = true;
      return running;
    }
    missed = false;
    running = run()
      .then(
        () => undefined,
        (error: unknown) => onError(error),
      )
      .finally(() => {
        running = undefined;
        // One catch-up run for the ticks this one overran, never a queue of them.
        if (missed && !stopped) void tick();
      });
    return running;
  };
  const firstRunAfterMs = options.firstRunAfterMs ?? 0;
  let first: NodeJS.Timeout | undefined;
  if (firstRunAfterMs > 0) first = setTimeout(tick, firstRunAfterMs);
  else await tick();
  const interval = setInterval(tick, intervalMs);
  return {
    stop: async () => {
      stopped = true;
      if (first) clearTimeout(first);
      clearInterval(interval);
      // A catch-up run may have started as the last one ended: wait for it too.
      while (running) await running;
    },
  };
}
