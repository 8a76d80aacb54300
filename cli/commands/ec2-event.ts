import { readFile } from 'node:fs/promises';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { isInstanceId } from '../../lib/auth/instance-identity.ts';
import { readConfig } from '../../lib/config.ts';
import { formatRef } from '../../lib/domain/model.ts';
import {
  EC2_STATES,
  type Ec2StateChangeEvent,
  ec2StateChangeEvent,
  parseEc2StateChange,
} from '../../lib/protocol/ec2-state-change.ts';
import {
  applyInstanceStateChange,
  type InstanceStateChangeDependencies,
} from '../../lib/registration/instance-state-change.ts';
import { type DryRunMode, dryRunSuffix, writeNothingOption } from '../dry-run-option.ts';
import { type CommandRegistration, UsageError } from './context.ts';

interface Ec2EventOptions {
  instanceId?: string;
  state: string;
  file?: string;
  states?: string;
  dryRun: DryRunMode;
}

/**
 * `registrar ec2-event`: runs the EC2 state-change function's own decisions against the registry
 * the CLI points at (the local runtime's, usually), as EventBridge would on AWS.
 */
export const registerEc2Event: CommandRegistration = (program, context) => {
  program
    .command('ec2-event')
    .description(
      'deliver an EC2 instance state-change notification: removes the instance’s entries now (as the EventBridge rule does on AWS)',
    )
    .option('--instance-id <id>', 'the instance (i-...)', (text: string) => {
      if (!isInstanceId(text)) {
        throw new InvalidArgumentError('must be an EC2 instance id: i- and 8 or 17 hex digits');
      }
      return text;
    })
    .addOption(
      new Option('--state <state>', 'the state EC2 reports')
        .choices(EC2_STATES)
        .default('terminated'),
    )
    .option('--file <path>', 'an EventBridge event (JSON) instead of --instance-id and --state')
    .option(
      '--states <list>',
      'the states that remove entries (default: REGISTRAR_EC2_STATES, else shutting-down,terminated)',
    )
    .addOption(writeNothingOption())
    .action(async (options: Ec2EventOptions, command: Command) => {
      if ((options.file === undefined) === (options.instanceId === undefined)) {
        throw new UsageError('give --instance-id <id> or --file <event.json>, one of them');
      }
      const event = options.file
        ? (JSON.parse(await readFile(options.file, 'utf8')) as Ec2StateChangeEvent)
        : ec2StateChangeEvent(options.instanceId ?? '', options.state, context.now());
      const { registry, terminated } = await context.stores(command);
      const env: Record<string, string | undefined> = { ...context.io.env, REGISTRAR_TABLE: 'cli' };
      if (options.states !== undefined) env.REGISTRAR_EC2_STATES = options.states;
      if (options.dryRun !== 'none') {
        // The function's decision without its writes: the instance's entries as the removal
        // reads them; nothing deleted, no terminated instance remembered.
        const change = parseEc2StateChange(event);
        const states = readConfig(env).ec2States;
        const suffix = dryRunSuffix(options.dryRun);
        if (!states.includes(change.state)) {
          context.out(
            `instance ${change.instanceId} ${change.state}: state ${change.state} is not one that removes entries (${states.join(', ')}) ${suffix}\n`,
          );
          return;
        }
        const refs = await registry.entriesOfInstance(change.instanceId);
        for (const ref of refs)
          context.out(`workloadentry "${formatRef(ref)}" removed ${suffix}\n`);
        context.out(
          `instance ${change.instanceId} ${change.state}: ${refs.length} removed ${suffix}\n`,
        );
        return;
      }
      const deps: InstanceStateChangeDependencies = {
        config: readConfig(env),
        store: registry,
        // As the deployed function in IAM mode: a terminated instance is remembered.
        terminatedInstances: terminated,
        now: context.now,
      };
      // The function's own decisions (lib/registration/instance-state-change.ts), without its
      // Lambda wrapping: the terminal gets the CLI's lines, not the function's JSON log.
      const summary = await applyInstanceStateChange(deps, parseEc2StateChange(event));
      // What was done goes to stdout, as kubectl prints `... deleted`; errors go to stderr.
      for (const entry of summary.removed) context.out(`workloadentry "${entry}" removed\n`);
      const note = summary.ignored
        ? `state ${summary.state} is not one that removes entries (${deps.config.ec2States.join(', ')})`
        : `${summary.removed.length} removed${summary.kept.length > 0 ? `, ${summary.kept.length} kept (a newer instance holds them)` : ''}`;
      context.out(`instance ${summary.instanceId} ${summary.state}: ${note}\n`);
    });
};
