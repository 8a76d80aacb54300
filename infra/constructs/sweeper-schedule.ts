import { Duration } from 'aws-cdk-lib';
import { EventField, Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { Function as RegistrarLambda } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { DEFAULTS, ENV } from '../../lib/config.ts';
import type { StackOptions } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { registrarEnvironment } from './registrar-functions.ts';
import type { RegistryTable } from './registry-table.ts';
import { sweeperSizing } from './sweeper-sizing.ts';
import { tableAccess } from './table-access.ts';

export interface SweeperScheduleProps {
  registry: RegistryTable;
  options: StackOptions;
}

/** EventBridge allows 5 targets a rule. */
const TARGETS_PER_RULE = 5;

/**
 * The sweeper function and the EventBridge schedule that runs it; with `heartbeatLanes` n > 1,
 * also the invocations of heartbeat lanes 1 .. n-1 each tick (lib/sweep/heartbeat-lane-run.ts):
 * the same function, an event naming the lane, on rules of their own (up to 5 lanes a rule), so
 * the sweep's rule stays as it was.
 */
export class SweeperSchedule extends Construct {
  readonly sweeper: RegistrarLambda;
  readonly rule: Rule;
  /** The rules that start heartbeat lanes 1 .. n-1 (none with one lane). */
  readonly laneRules: Rule[];

  constructor(scope: Construct, id: string, props: SweeperScheduleProps) {
    super(scope, id);
    const { timeoutS, maxDeletes, memoryMb } = sweeperSizing(props.options);
    const sweeper = new RegistrarFunction(this, 'Sweeper', {
      name: 'sweeper',
      environment: {
        ...registrarEnvironment(props.registry, props.options),
        [ENV.sweepMaxDeletes]: String(maxDeletes),
        [ENV.sweepDeletesPerSecond]: String(DEFAULTS.sweepDeletesPerSecond),
        // Lane 0 plans the lanes' shares for this many; a lane's event is checked against it.
        [ENV.heartbeatLanes]: String(props.options.heartbeatLanes),
      },
      timeout: Duration.seconds(timeoutS),
      memorySize: memoryMb,
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

    // Lanes 1 .. n-1, five to a rule: `HeartbeatLanes1` holds lanes 1-5, `HeartbeatLanes6`
    // lanes 6-10, ... (stable IDs: adding lanes adds rules, never renames one).
    this.laneRules = [];
    const lanes = props.options.heartbeatLanes;
    for (let first = 1; first < lanes; first += TARGETS_PER_RULE) {
      const last = Math.min(lanes - 1, first + TARGETS_PER_RULE - 1);
      const targets = [];
      for (let lane = first; lane <= last; lane++) {
        targets.push(
          new LambdaFunction(sweeper, {
            retryAttempts: 0,
            // The rule's fire time rides along: a lane delivered late works from its tick's plan.
            event: RuleTargetInput.fromObject({ heartbeatLane: lane, time: EventField.time }),
          }),
        );
      }
      this.laneRules.push(
        new Rule(this, `HeartbeatLanes${first}`, {
          description: `Runs workload-registrar heartbeat lanes ${first}-${last} (silent VMs of heartbeat groups)`,
          schedule: Schedule.rate(Duration.minutes(props.options.sweepRateMinutes)),
          targets,
        }),
      );
    }
  }
}
