import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { MESH_OPTION_KEYS } from './constructs/mesh-identity.ts';
import { PROJECTOR_OPTION_KEYS } from './constructs/projector.ts';
import { unknownContextKeys, unknownKeysMessage } from './context-keys.ts';
import { GROUP_SOURCE_OPTION_KEYS } from './group-source-option.ts';
import { RegistrarStack } from './registrar-stack.ts';
import { OPTION_KEYS, StackOptionsError } from './stack-options.ts';

/**
 * `npx cdk synth` / `npx cdk deploy`. Options come from context (`-c gracePeriod=10m`, see
 * docs/deploy.md); the stack validates them at synth. cdk-nag runs on every synth, so an
 * unacknowledged finding stops the deploy before anything reaches the account.
 */
const app = new App();
try {
  // Every construct that reads context lists its keys; a key no list names is a typo.
  const known = [
    ...OPTION_KEYS,
    ...Object.values(PROJECTOR_OPTION_KEYS),
    ...Object.keys(MESH_OPTION_KEYS),
    ...Object.values(GROUP_SOURCE_OPTION_KEYS),
    'stackName',
  ];
  const unknown = unknownContextKeys(app.node.getAllContext(), known);
  if (unknown.length > 0) throw new StackOptionsError(unknownKeysMessage(unknown, known));
  new RegistrarStack(app, app.node.tryGetContext('stackName') ?? 'WorkloadRegistrar', {
    description: 'workload-registrar: WorkloadEntry auto-registration for EC2 VMs',
    // Region and account from the CLI's credentials (AWS_REGION / profile), as `cdk deploy` sets.
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
} catch (error) {
  // A bad option is the user's to fix: its message alone, not inside a stack trace of the app.
  if (!(error instanceof StackOptionsError)) throw error;
  process.stderr.write(`workload-registrar: ${error.message}\n`);
  process.exit(1);
}
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
