/**
 * The local stand-in for the EventBridge schedule: runs the sweeper once at start (entries left
 * from the previous run may be due), then every interval. A run still going when the next is
 * due is not doubled up; the schedule on AWS is sized the same way (runs never overlap).
 */
export interface SweepTimer {
  /** Stops the schedule and waits for a run in progress. */
  stop(): Promise<void>;
}

export async function startSweepTimer(
  run: () => Promise<unknown>,
  intervalMs: number,
  onError: (error: unknown) => void,
): Promise<SweepTimer> {
  let running: Promise<void> | undefined;
  const tick = () => {
    running ??= run()
      .then(
        () => undefined,
        (error: unknown) => onError(error),
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  await tick();
  const interval = setInterval(tick, intervalMs);
  return {
    stop: async () => {
      clearInterval(interval);
      await running;
    },
  };
}
