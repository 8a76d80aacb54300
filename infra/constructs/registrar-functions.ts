import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { ENV } from '../../lib/config.ts';
import { formatDuration } from '../../lib/domain/duration.ts';
import type { StackOptions } from '../stack-options.ts';
import { RegistrarFunction } from './registrar-function.ts';
import type { RegistryTable } from './registry-table.ts';

export interface RegistrarFunctionsProps {
  registry: RegistryTable;
  options: StackOptions;
}

/** The configuration every function reads (lib/config.ts), from the validated stack options. */
export function registrarEnvironment(
  registry: RegistryTable,
  options: StackOptions,
): Record<string, string> {
  return {
    [ENV.tableName]: registry.table.tableName,
    [ENV.gracePeriod]: formatDuration(options.gracePeriodMs),
    [ENV.maxConnectionAge]: formatDuration(options.maxConnectionAgeMs),
    [ENV.authMode]: options.authMode,
  };
}

/**
 * The functions behind the WebSocket routes. Each gets only the table access its route needs;
 * none gets the API Gateway management API, because replies travel back as route responses.
 */
export class RegistrarFunctions extends Construct {
  /** The REQUEST authorizer; absent in IAM mode, where API Gateway verifies SigV4 itself. */
  readonly authorize: IFunction | undefined;
  readonly connect: IFunction;
  readonly disconnect: IFunction;
  readonly message: IFunction;
  /** Every function, for alarms and the dashboard. */
  readonly all: { name: string; fn: IFunction }[];

  constructor(scope: Construct, id: string, props: RegistrarFunctionsProps) {
    super(scope, id);
    const environment = registrarEnvironment(props.registry, props.options);
    const build = (name: 'authorize' | 'connect' | 'disconnect' | 'message', construct: string) =>
      new RegistrarFunction(this, construct, { name, environment }).function;

    this.connect = build('connect', 'Connect');
    this.disconnect = build('disconnect', 'Disconnect');
    this.message = build('message', 'Message');
    // Connect writes the entry and the connection record, and in IAM mode reads the policy;
    // disconnect and health update both; all conditional writes, so read-write.
    props.registry.grantReadWriteData(this.connect);
    props.registry.grantReadWriteData(this.disconnect);
    props.registry.grantReadWriteData(this.message);

    if (props.options.authMode === 'token') {
      this.authorize = build('authorize', 'Authorize');
      // The authorizer only looks a token up: it must not be able to change the registry.
      props.registry.grantReadData(this.authorize);
    } else {
      this.authorize = undefined;
    }

    this.all = [
      ...(this.authorize ? [{ name: 'authorize', fn: this.authorize }] : []),
      { name: 'connect', fn: this.connect },
      { name: 'disconnect', fn: this.disconnect },
      { name: 'message', fn: this.message },
    ];
  }
}
