import type { StringMap } from './model.ts';

/**
 * What the agent itself gave when its entry was built (its connect's `label=` and `locality=`),
 * recorded on the entry so a template rollout can rebuild the entry from the new template and
 * let the agent's values win again, as they did at registration (DESIGN rule 5).
 */
export interface AgentGiven {
  labels: StringMap;
  /** Absent: the locality came from the template (it then follows the template). */
  locality?: string;
}

/** The agent's share of a connect: its labels as sent, and its locality if it named one. */
export function agentGivenOf(request: { labels: StringMap; locality?: string }): AgentGiven {
  return {
    labels: { ...request.labels },
    ...(request.locality !== undefined ? { locality: request.locality } : {}),
  };
}
