/** One probe attempt: success and, for logs and the entry's condition message, why. */
export interface ProbeResult {
  ok: boolean;
  message: string;
}

/** One attempt of a configured probe; never rejects, a failure is a result. */
export type ProbeCheck = () => Promise<ProbeResult>;

/** Seconds as Kubernetes writes them, for messages: 1000 -> "1s", 250 -> "0.25s". */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}
