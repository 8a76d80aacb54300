import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { Function as RegistrarLambda } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { DEFAULTS, ENV } from '../../lib/config.ts';
import type { StackOptions } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { registrarEnvironment } from './registrar-functions.ts';
import type { RegistryTable } from './registry-table.ts';
import { tableAccess } from './table-access.ts';

export interface SweeperScheduleProps {
  registry: RegistryTable;
  options: StackOptions;
}

// Lambda's hard maximum run time.
const LAMBDA_MAX_TIMEOUT_S = 900;
// Left for the index queries before the deletes and for the end of the run.
const MARGIN_S = 10;

/**
 * Sizing for a registry of 100,000 entries. The sweeper streams due entries from the sparse
 * index a page at a time and never holds the table, so memory is not the limit: 512 MB buys
 * the CPU for JSON and TLS. Time is: deletes are rate-limited to 50/s, so a run is sized to
 * end before the next tick. At the default 1-minute rate:
 *   timeout    = 60 s - 10 s                        = 50 s
 *   max deletes = 50/s x (50 s - 10 s for queries)  = 2,000 per run
 * so even if all 100,000 entries expire together (a region-wide disconnect), 50 runs
 * (50 minutes) delete them without ever overlapping.
 */
export function sweeperSizing(options: StackOptions): { timeoutS: number; maxDeletes: number } {
  const timeoutS = Math.min(options.sweepRateMinutes * 60 - MARGIN_S, LAMBDA_MAX_TIMEOUT_S);
  const maxDeletes = DEFAULTS.sweepDeletesPerSecond * (timeoutS - MARGIN_S);
  return { timeoutS, maxDeletes };
}

/** The sweeper function and the EventBridge schedule that runs it. */
export class SweeperSchedule extends Construct {
  readonly sweeper: RegistrarLambda;
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: SweeperScheduleProps) {
    super(scope, id);
    const { timeoutS, maxDeletes } = sweeperSizing(props.options);
    const sweeper = new RegistrarFunction(this, 'Sweeper', {
      name: 'sweeper',
      environment: {
        ...registrarEnvironment(props.registry, props.options),
        [ENV.sweepMaxDeletes]: String(maxDeletes),
        [ENV.sweepDeletesPerSecond]: String(DEFAULTS.sweepDeletesPerSecond),
      },
      timeout: Duration.seconds(timeoutS),
      memorySize: 512,
      // One sweep at a time is a lease in the table (functions/sweeper.ts), not reserved
      // concurrency: Lambda refuses a reservation in an account at the default limit of 10,
      // and a late tick throttled by it looked like an outage to the throttle alarm. Two runs
      // would race for the same candidates and double the delete rate a disrupted zone gets.
    }).function;
    // A failed or throttled tick is not retried past a minute: the next tick sweeps everything
    // that is due anyway, and a backlog of ticks would only run back to back.
    sweeper.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });
    // Queries the sweep index, deletes conditionally, keeps its own state and the policy item.
    props.registry.grantAccess(sweeper, tableAccess('sweeper', props.options.authMode));
    this.sweeper = sweeper;

    this.rule = new Rule(this, 'Schedule', {
      description: 'Runs the workload-registrar sweeper (deletes disconnected and stale entries)',
      schedule: Schedule.rate(Duration.minutes(props.options.sweepRateMinutes)),
      targets: [new LambdaFunction(sweeper, { retryAttempts: 0 })],
    });
  }
}
