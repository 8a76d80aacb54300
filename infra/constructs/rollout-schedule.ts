import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { Function as RegistrarLambda } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import type { GroupSource } from '../../lib/domain/group-source.ts';
import { ROLLOUT_ENV } from '../../lib/rollout/rollout-config.ts';
import type { StackOptions } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { registrarEnvironment } from './registrar-functions.ts';
import type { RegistryTable } from './registry-table.ts';
import { tableAccess } from './table-access.ts';

export interface RolloutScheduleProps {
  registry: RegistryTable;
  options: StackOptions;
  groupSource: GroupSource;
}

/**
 * A run lasts at most two schedule periods (REGISTRAR_ROLLOUT_RUN_TIME, 2 m): a 20,000-entry
 * rollout at the default pace finishes in one run. 2 m + 10 s margin + 20 s for the removals
 * and the end of the run = 150 s. Ticks that come while a run holds the lease do nothing.
 */
const TIMEOUT = Duration.seconds(150);

/** The rollout function: every minute, template changes to live entries, and group removals. */
export class RolloutSchedule extends Construct {
  readonly function: RegistrarLambda;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: RolloutScheduleProps) {
    super(scope, id);
    const source = props.groupSource;
    const fn = new RegistrarFunction(this, 'Function', {
      name: 'rollout',
      description: 'workload-registrar rollout function: template changes to live entries',
      environment: {
        ...registrarEnvironment(props.registry, props.options),
        [ROLLOUT_ENV.groupSource]: source.kind,
        ...(source.kind === 'cluster' && source.selector
          ? { [ROLLOUT_ENV.groupSelector]: source.selector }
          : {}),
      },
      timeout: TIMEOUT,
      memorySize: 512,
    }).function;
    // A missed tick is not retried: the next one continues from the saved cursor.
    fn.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });
    props.registry.grantAccess(fn, tableAccess('rollout', props.options.authMode));
    this.function = fn;
    this.rule = new Rule(this, 'Schedule', {
      description: 'Runs the workload-registrar rollout (template changes reach live entries)',
      schedule: Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaFunction(fn, { retryAttempts: 0 })],
    });
  }
}
