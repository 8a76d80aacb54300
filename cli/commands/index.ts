import { registerApply } from './apply.ts';
import type { CommandRegistration } from './context.ts';
import { registerDelete } from './delete.ts';
import { registerDescribe } from './describe.ts';
import { registerEc2Event } from './ec2-event.ts';
import { registerExport } from './export.ts';
import { registerGet } from './get.ts';
import { registerPolicy } from './policy.ts';
import { registerProject } from './project.ts';
import { registerSweep } from './sweep.ts';
import { registerToken } from './token.ts';

/**
 * Every command of `registrar`, in the order `--help` lists them. To add one, write
 * `cli/commands/<name>.ts` exporting a `CommandRegistration` and add one line here.
 */
export const COMMANDS: readonly CommandRegistration[] = [
  registerApply,
  registerGet,
  registerDescribe,
  registerDelete,
  registerToken,
  registerPolicy,
  registerSweep,
  registerEc2Event,
  registerExport,
  registerProject,
];
