import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { RegistrarStack } from './registrar-stack.ts';
import { StackOptionsError } from './stack-options.ts';

/**
 * `npx cdk synth` / `npx cdk deploy`. Options come from context (`-c gracePeriod=10m`, see
 * docs/deploy.md); the stack validates them at synth. cdk-nag runs on every synth, so an
 * unacknowledged finding stops the deploy before anything reaches the account.
 */
const app = new App();
try {
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
