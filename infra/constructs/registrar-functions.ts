import { Stack, Token } from 'aws-cdk-lib';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { KNOWN_REGIONS } from '../../lib/auth/aws-instance-identity-certs.ts';
import { ENV } from '../../lib/config.ts';
import { formatDuration } from '../../lib/domain/duration.ts';
import type { StackOptions } from '../stack-options.ts';
import { assetPath, RegistrarFunction } from './registrar-function.ts';
import type { RegistryTable } from './registry-table.ts';
import { tableAccess } from './table-access.ts';

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
    [ENV.sweepInterval]: formatDuration(options.sweepRateMinutes * 60_000),
    [ENV.livenessInterval]: formatDuration(options.livenessIntervalMs),
    [ENV.authMode]: options.authMode,
    [ENV.disruptionThreshold]: String(options.disruptionThreshold),
    [ENV.disruptionWindow]: formatDuration(options.disruptionWindowMs),
    [ENV.secondaryDeletesPerSecond]: String(options.secondaryDeletesPerSecond),
    [ENV.holdBound]: formatDuration(options.holdBoundMs),
    [ENV.ec2States]: options.ec2States.join(','),
    ...(options.oldestAgentVersion === undefined
      ? {}
      : { [ENV.oldestAgentVersion]: options.oldestAgentVersion }),
  };
}

/**
 * IAM mode: what `$connect` needs to attest instances (lib/auth/instance-attestation.ts). Only
 * the connect function gets it: no other route sees a document, and certificates would take
 * room in every function's 4 KB environment. The trusted Regions travel as names (the
 * certificates are bundled and pinned in code): the stack's own Region, then the option's.
 */
export function attestationEnvironment(
  options: StackOptions,
  stackRegion: string,
): Record<string, string> {
  if (options.instanceAttestation === undefined) return {};
  return {
    [ENV.instanceAttestation]: options.instanceAttestation,
    ...(options.instanceIdentityCertsFile === undefined
      ? {
          [ENV.instanceIdentityRegions]: [stackRegion, ...options.instanceIdentityRegions].join(
            ',',
          ),
        }
      : { [ENV.instanceIdentityCerts]: assetPath(CERTIFICATES_FILE) }),
  };
}

/** The operator's instance identity certificates, in the connect function's code. */
export const CERTIFICATES_FILE = 'instance-identity-certs.pem';

/**
 * The Regions whose shipped certificates `$connect`'s code carries: those attestation trusts
 * (the stack's own and `instanceIdentityRegions`), none in token mode or with an operator's
 * certificates. A stack whose Region is known only at deploy (environment-agnostic) carries
 * every pinned Region's, as the function then learns its Region from AWS_REGION.
 */
export function certificateRegions(options: StackOptions, stackRegion: string): readonly string[] {
  if (
    options.instanceAttestation === undefined ||
    options.instanceIdentityCertsFile !== undefined
  ) {
    return [];
  }
  if (Token.isUnresolved(stackRegion)) return KNOWN_REGIONS;
  return [stackRegion, ...options.instanceIdentityRegions];
}

/**
 * The functions behind the WebSocket routes. Each gets only the table access its route needs
 * (infra/constructs/table-access.ts). Replies travel back as route responses; only disconnect
 * gets the management API (granted by the stack, which knows the stage), to check whether the
 * entry's other holders still exist.
 */
export class RegistrarFunctions extends Construct {
  /** The REQUEST authorizer; absent in IAM mode, where API Gateway verifies SigV4 itself. */
  readonly authorize: LambdaFunction | undefined;
  readonly connect: LambdaFunction;
  readonly disconnect: LambdaFunction;
  readonly message: LambdaFunction;
  /** Every function, for alarms and the dashboard. */
  readonly all: { name: string; fn: LambdaFunction }[];

  constructor(scope: Construct, id: string, props: RegistrarFunctionsProps) {
    super(scope, id);
    const environment = registrarEnvironment(props.registry, props.options);
    const build = (
      name: 'authorize' | 'connect' | 'disconnect' | 'message',
      construct: string,
      extra: Record<string, string> = {},
    ) =>
      new RegistrarFunction(this, construct, {
        name,
        environment: { ...environment, ...extra },
      }).function;

    const stackRegion = Stack.of(this).region;
    const certificates = props.options.instanceIdentityCertsFile;
    this.connect = new RegistrarFunction(this, 'Connect', {
      name: 'connect',
      environment: { ...environment, ...attestationEnvironment(props.options, stackRegion) },
      certificateRegions: certificateRegions(props.options, stackRegion),
      // An operator's certificates travel in the code, not the 4 KB environment: any number.
      ...(certificates ? { files: { [CERTIFICATES_FILE]: certificates } } : {}),
    }).function;
    this.disconnect = build('disconnect', 'Disconnect');
    this.message = build('message', 'Message');
    const { authMode } = props.options;
    props.registry.grantAccess(this.connect, tableAccess('connect', authMode));
    props.registry.grantAccess(this.disconnect, tableAccess('disconnect', authMode));
    props.registry.grantAccess(this.message, tableAccess('message', authMode));

    if (authMode === 'token') {
      this.authorize = build('authorize', 'Authorize');
      // The authorizer only looks a token up: it can neither change nor list the registry.
      props.registry.grantAccess(this.authorize, tableAccess('authorize', authMode));
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
