import type { CommandRegistration } from './context.ts';

/**
 * One command of `registrar` as `--help` lists it, and where its code is. A command's module
 * is imported only when the command line names it: each one pulls in what it needs (the AWS
 * SDK, zod, yaml, the Kubernetes client), and `registrar --help` or `registrar get` must not
 * wait for every command's (issue 17: 225 ms for --help, 351 ms for get before).
 */
export interface CommandEntry {
  name: string;
  /** What `registrar --help` shows, left and right: the same as the loaded command's (tested). */
  term: string;
  description: string;
  load(): Promise<CommandRegistration>;
  /** Hidden commands the module also registers (`complete`, which the completion scripts run). */
  hidden?: readonly string[];
  /** The module reads the whole command tree (completion): every other command is loaded first. */
  needsAll?: boolean;
}

/**
 * Every command of `registrar`, in the order `--help` lists them. To add one, write
 * `cli/commands/<name>.ts` exporting a `CommandRegistration` and add its entry here
 * (test/unit/cli-lazy-commands.test.ts says when the term or description is out of date).
 */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'apply',
    term: 'apply [options]',
    description: 'create or update WorkloadGroups and hand-made WorkloadEntries from YAML or JSON',
    load: async () => (await import('./apply.ts')).registerApply,
  },
  {
    name: 'get',
    term: 'get [options] <resource> [names...]',
    description:
      "list workloadgroups (wg) or workloadentries (we), their events or their agents' versions, or show some by name",
    load: async () => (await import('./get.ts')).registerGet,
  },
  {
    name: 'describe',
    term: 'describe [options] <resource> [names...]',
    description: 'show workloadgroups (wg) or workloadentries (we) in detail',
    load: async () => (await import('./describe.ts')).registerDescribe,
  },
  {
    name: 'diff',
    term: 'diff [options]',
    description: 'show how the registry differs from the objects of a file (as kubectl diff)',
    load: async () => (await import('./diff.ts')).registerDiff,
  },
  {
    name: 'delete',
    term: 'delete [options] [resource] [names...]',
    description:
      'delete workloadgroups (wg) or workloadentries (we) by name, or those a file describes',
    load: async () => (await import('./delete.ts')).registerDelete,
  },
  {
    name: 'rollout',
    term: 'rollout',
    description: "a group's template rollout to its live entries: status, pause, resume",
    load: async () => (await import('./rollout.ts')).registerRollout,
  },
  {
    name: 'label',
    term: 'label [options] <resource> <name> <changes...>',
    description: 'update the labels of a workloadgroup (wg) or hand-made workloadentry (we)',
    load: async () => (await import('./modify.ts')).registerLabel,
  },
  {
    name: 'annotate',
    term: 'annotate [options] <resource> <name> <changes...>',
    description: 'update the annotations of a workloadgroup (wg) or hand-made workloadentry (we)',
    load: async () => (await import('./modify.ts')).registerAnnotate,
  },
  {
    name: 'patch',
    term: 'patch [options] <resource> <name>',
    description:
      'update fields of a workloadgroup (wg) or hand-made workloadentry (we) with a merge or JSON patch',
    load: async () => (await import('./modify.ts')).registerPatch,
  },
  {
    name: 'edit',
    term: 'edit [options] <resource> <name>',
    description:
      'edit a workloadgroup (wg) or hand-made workloadentry (we) in $KUBE_EDITOR or $EDITOR',
    load: async () => (await import('./modify.ts')).registerEdit,
  },
  {
    name: 'cordon',
    term: 'cordon [options] <resource> [names...]',
    description:
      'take workloadentries (we) out of traffic (Healthy False, Maintenance) without disconnecting them, until uncordon',
    load: async () => (await import('./cordon.ts')).registerCordon,
  },
  {
    name: 'uncordon',
    term: 'uncordon [options] <resource> [names...]',
    description: 'put cordoned workloadentries (we) back into traffic',
    load: async () => (await import('./cordon.ts')).registerUncordon,
  },
  {
    name: 'token',
    term: 'token',
    description: 'join tokens: what an agent presents to register a VM (token auth mode)',
    load: async () => (await import('./token.ts')).registerToken,
  },
  {
    name: 'policy',
    term: 'policy',
    description: 'IAM auth mode: which IAM roles may register VMs in which namespace',
    load: async () => (await import('./policy.ts')).registerPolicy,
  },
  {
    name: 'namespace',
    term: 'namespace|ns',
    description: 'quotas, networks and address ranges a namespace is allowed',
    load: async () => (await import('./namespace.ts')).registerNamespace,
    hidden: ['ns'],
  },
  {
    name: 'sweep',
    term: 'sweep [options]',
    description: 'run one sweep now: delete auto-registered entries that are disconnected or stale',
    load: async () => (await import('./sweep.ts')).registerSweep,
  },
  {
    name: 'migrate',
    term: 'migrate',
    description: "the table's schema: which migrations ran, which release wrote it; run the rest",
    load: async () => (await import('./migrate.ts')).registerMigrate,
  },
  {
    name: 'ec2-event',
    term: 'ec2-event [options]',
    description:
      'deliver an EC2 instance state-change notification: removes the instance’s entries now (as the EventBridge rule does on AWS)',
    load: async () => (await import('./ec2-event.ts')).registerEc2Event,
  },
  {
    name: 'dashboard',
    term: 'dashboard [options]',
    description: 'serve a read-only web view of the registry on this machine and open it',
    load: async () => (await import('./dashboard.ts')).registerDashboard,
  },
  {
    name: 'export',
    term: 'export [options]',
    description: 'print the registry as Kubernetes objects (YAML) for kubectl apply -f - or GitOps',
    load: async () => (await import('./export.ts')).registerExport,
  },
  {
    name: 'project',
    term: 'project [options]',
    description: 'reconcile the registry into a Kubernetes cluster once and print what changed',
    load: async () => (await import('./project.ts')).registerProject,
  },
  {
    name: 'version',
    term: 'version [options]',
    description: "print this CLI's release and the registrar's",
    load: async () => (await import('./version.ts')).registerVersion,
  },
  {
    name: 'completion',
    term: 'completion <shell>',
    description: 'print a bash, zsh or fish completion script: source <(registrar completion bash)',
    load: async () => (await import('./completion.ts')).registerCompletion,
    hidden: ['complete'],
    needsAll: true,
  },
];
