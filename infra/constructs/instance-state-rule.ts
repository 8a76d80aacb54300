import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Rule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { Function as RegistrarLambda } from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { GONE_STATES } from '../../lib/auth/terminated-instances.ts';
import type { StackOptions } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import { registrarEnvironment } from './registrar-functions.ts';
import type { RegistryTable } from './registry-table.ts';
import { tableAccess } from './table-access.ts';

export interface InstanceStateRuleProps {
  registry: RegistryTable;
  options: StackOptions;
}

// An event older than an hour is moot: the sweeper has removed the entry after its grace
// period (or liveness found the connection gone) long before.
const MAX_EVENT_AGE = Duration.hours(1);

/**
 * EC2 knows first: an EventBridge rule on the account's EC2 instance state-change
 * notifications (only the states the `ec2States` option names) runs a function that removes
 * the instance's entries at once, without the grace period and never held by fail static.
 * The function may only query the instance index (keys) and delete entries.
 *
 * No event is dropped silently. Two ways one can fail, both into one dead-letter queue that
 * an alarm watches: EventBridge cannot invoke the function (it retries, then sends the event
 * itself), or the function fails (Lambda retries an asynchronous invocation twice, then sends
 * a record with the event as `requestPayload` to the on-failure destination).
 */
export class InstanceStateRule extends Construct {
  readonly function: RegistrarLambda;
  readonly rule: Rule;
  readonly deadLetters: Queue;

  constructor(scope: Construct, id: string, props: InstanceStateRuleProps) {
    super(scope, id);
    this.function = new RegistrarFunction(this, 'Function', {
      name: 'ec2StateChange',
      environment: registrarEnvironment(props.registry, props.options),
    }).function;
    props.registry.grantAccess(
      this.function,
      tableAccess('ec2StateChange', props.options.authMode),
    );
    this.deadLetters = new Queue(this, 'DeadLetters', {
      // Two weeks (SQS's maximum) to look at an event and re-run it by hand.
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // Failed removals are diagnostics, not registry state: they go with the stack.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(this.deadLetters).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is the dead-letter queue of the EC2 state-change rule and function: an alarm fires on its first message and an operator reads it; a queue behind it would only hide the failure.',
    });
    // A failed removal is retried; a repeat finds nothing left to remove.
    this.function.configureAsyncInvoke({
      retryAttempts: 2,
      maxEventAge: MAX_EVENT_AGE,
      onFailure: new SqsDestination(this.deadLetters),
    });
    this.rule = new Rule(this, 'Rule', {
      description: 'Removes the WorkloadEntries of EC2 instances that shut down or terminate',
      eventPattern: {
        source: ['aws.ec2'],
        detailType: ['EC2 Instance State-change Notification'],
        detail: { state: ruleStates(props.options) },
      },
      targets: [
        new LambdaFunction(this.function, {
          retryAttempts: 3,
          maxEventAge: MAX_EVENT_AGE,
          deadLetterQueue: this.deadLetters,
        }),
      ],
    });
  }
}

/**
 * The states the rule lets through: the ones that remove entries, and in IAM mode also the
 * ones after which the function remembers the instance as terminated (its credentials and
 * identity document are refused for a day, whatever states remove entries).
 */
export function ruleStates(options: StackOptions): string[] {
  const states = new Set(options.ec2States);
  if (options.authMode === 'iam') for (const state of GONE_STATES) states.add(state);
  return [...states];
}
