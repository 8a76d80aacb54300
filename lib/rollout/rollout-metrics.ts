/** The rollout function's metrics (namespace WorkloadRegistrar, dimension service). */
export const ROLLOUT_METRIC = {
  /** Entries brought to their group's current template (one conditional write each). */
  entriesUpdated: 'RolloutEntriesUpdated',
  /** Entry writes that lost a race (a connect or health report first); each re-read. */
  conflicts: 'RolloutConflicts',
  /** Entries of an earlier release waiting for their agent's next connect. */
  waiting: 'RolloutEntriesWaiting',
  /** Rollouts an operator paused. */
  paused: 'RolloutsPaused',
  /** Groups whose pace annotation is invalid (the default pace is used). */
  problems: 'RolloutProblems',
  /** Groups removed because the cluster deleted them (groups from the cluster). */
  groupsRemoved: 'GroupsRemoved',
  /** A run reached its deadline with work left (the next continues). */
  stoppedEarly: 'RolloutStoppedEarly',
} as const;
