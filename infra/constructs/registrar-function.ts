import { join } from 'node:path';
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../lib/observability.ts';
import {
  aliasArgs,
  BUNDLE,
  bundleDefine,
  FUNCTION_ALIASES,
  FUNCTION_ENTRIES,
  type FunctionName,
  REPO_ROOT,
} from './bundling.ts';

export interface RegistrarFunctionProps {
  /** One of the registrar's own functions, or `entry` for another one (the projector). */
  name: FunctionName | 'project' | 'mesh-identity';
  /** Source file, relative to the repository; default FUNCTION_ENTRIES[name]. */
  entry?: string;
  /** What the role is for, as IAM shows it. */
  description?: string;
  environment: Record<string, string>;
  timeout?: Duration;
  memorySize?: number;
  /** For a function that must reach a private endpoint (an EKS API server). */
  vpc?: IVpc;
  vpcSubnets?: SubnetSelection;
  securityGroups?: ISecurityGroup[];
  /**
   * The Regions whose instance identity certificates the code carries (`$connect` in IAM mode
   * with the shipped certificates); default none: no other function verifies a document.
   */
  certificateRegions?: readonly string[];
  /**
   * Files copied into the function's code beside its bundle (name in the asset -> path on the
   * synth machine), read at run time from `/var/task/<name>` (assetPath): data too large for
   * Lambda's 4 KB of environment, such as an operator's certificates.
   */
  files?: Record<string, string>;
}

/** Where Lambda puts a function's code: a file of `files` is read from here. */
export function assetPath(name: string): string {
  return `/var/task/${name}`;
}

/** Bundling hooks that copy `files` into the asset after esbuild ran (local bundling). */
function copyInto(files: Record<string, string>) {
  return {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_input: string, output: string) =>
      Object.entries(files).map(
        ([name, source]) => `cp ${shellQuote(source)} ${shellQuote(join(output, name))}`,
      ),
  };
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * One Lambda function built from `functions/<name>.ts`: bundled locally by esbuild (no
 * Docker), ESM, minified, with source maps beside it (not used at run time), on nodejs22.x/arm64 (Graviton: ~20% cheaper per
 * GB-second for the same work), logging JSON to a log group with a retention.
 */
export class RegistrarFunction extends Construct {
  readonly function: NodejsFunction;
  /** The function's own role: grants go here. */
  readonly role: Role;

  constructor(scope: Construct, id: string, props: RegistrarFunctionProps) {
    super(scope, id);
    const logGroup = new LogGroup(this, 'Logs', {
      retention: RetentionDays.ONE_MONTH,
      // Logs are diagnostics, not registry state: they go with the stack.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // An own role instead of AWSLambdaBasicExecutionRole, whose log permissions name every
    // log group in the account: this one may write to its own log group only.
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: props.description ?? `workload-registrar ${props.name} function`,
    });
    this.role = role;
    logGroup.grantWrite(role);
    this.function = new NodejsFunction(this, 'Function', {
      entry: join(REPO_ROOT, props.entry ?? FUNCTION_ENTRIES[props.name as FunctionName]),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize ?? 256,
      timeout: props.timeout ?? Duration.seconds(10),
      logGroup,
      role,
      vpc: props.vpc,
      vpcSubnets: props.vpcSubnets,
      securityGroups: props.securityGroups,
      // Powertools Logger already writes JSON; JSON format also lets Lambda's own platform
      // lines be queried the same way.
      loggingFormat: LoggingFormat.JSON,
      environment: {
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        // No --enable-source-maps: Node would parse the function's source map on the first
        // stack trace of each container (measured +50-450 ms, bench/first-error.ts), and the
        // authorizer throws on every refused token. The maps ship in the asset instead, for
        // the operator: scripts/decode-stack.ts maps a logged stack to the TypeScript sources.
        ...props.environment,
      },
      bundling: {
        format: OutputFormat.ESM,
        target: BUNDLE.target,
        minify: BUNDLE.minify,
        sourceMap: BUNDLE.sourceMap,
        sourcesContent: BUNDLE.sourcesContent,
        externalModules: [...BUNDLE.externalModules],
        mainFields: [...BUNDLE.mainFields],
        banner: BUNDLE.banner,
        // Local esbuild from node_modules: nothing here can pull a Docker image.
        forceDockerBundling: false,
        // Only what the function runs (issue 27): the certificates it verifies against, and
        // for the registrar's own functions Lambda's environment credentials, not the chain.
        define: bundleDefine(props.certificateRegions),
        ...(props.name in FUNCTION_ENTRIES && props.entry === undefined
          ? { esbuildArgs: { '--alias': aliasArgs(FUNCTION_ALIASES) } }
          : {}),
        ...(props.files ? { commandHooks: copyInto(props.files) } : {}),
      },
    });
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'The runtime is pinned to nodejs22.x on purpose: the project targets Node 22 (docs/contributing.md), and the local runtime and CI run the same handlers on Node 22.',
    });
  }
}
