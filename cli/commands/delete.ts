import type { Command } from 'commander';
import type { CommandRegistration } from './context.ts';
import {
  namespaceOf,
  namespaceOption,
  notFound,
  QUALIFIED,
  RESOURCE_HELP,
  resourceKind,
} from './resources.ts';

export const registerDelete: CommandRegistration = (program, context) => {
  program
    .command('delete')
    .description(`delete one of ${RESOURCE_HELP}`)
    .argument('<resource>', RESOURCE_HELP)
    .argument('<name>', 'the object')
    .addOption(namespaceOption())
    .addHelpText(
      'after',
      '\nDeleting an auto-registered entry of a connected VM is temporary: it registers again on its next connect.',
    )
    .action(
      async (resource: string, name: string, options: { namespace?: string }, command: Command) => {
        const kind = resourceKind(resource);
        const ref = { namespace: namespaceOf(options), name };
        const { catalog } = await context.stores(command);
        const deleted =
          kind === 'WorkloadGroup'
            ? await catalog.deleteGroup(ref)
            : await catalog.deleteEntry(ref);
        if (!deleted) throw notFound(kind, ref);
        context.out(`${QUALIFIED[kind]} "${name}" deleted\n`);
      },
    );
};
