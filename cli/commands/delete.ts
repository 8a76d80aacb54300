import { type Command, Option } from 'commander';
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
    .addOption(
      new Option(
        '--cascade <mode>',
        "for a group: 'background' also deletes the entries it auto-registered, as Kubernetes garbage-collects them through their ownerReference; 'orphan' keeps them",
      )
        .choices(['background', 'orphan'])
        .default('background'),
    )
    .addHelpText(
      'after',
      '\nDeleting an auto-registered entry of a connected VM is temporary: it registers again on its next connect.',
    )
    .action(
      async (
        resource: string,
        name: string,
        options: { namespace?: string; cascade: 'background' | 'orphan' },
        command: Command,
      ) => {
        const kind = resourceKind(resource);
        const ref = { namespace: namespaceOf(options), name };
        const { catalog } = await context.stores(command);
        if (kind === 'WorkloadEntry') {
          if (!(await catalog.deleteEntry(ref))) throw notFound(kind, ref);
          context.out(`${QUALIFIED[kind]} "${name}" deleted\n`);
          return;
        }
        // The group goes first, so connects are refused (404) from then on. A $connect function
        // that cached the group (REGISTRAR_GROUP_CACHE_TTL, 10 s) can still register a VM
        // behind the cascade; that entry is an ordinary one and is swept once it disconnects.
        if (!(await catalog.deleteGroup(ref))) throw notFound(kind, ref);
        context.out(`${QUALIFIED[kind]} "${name}" deleted\n`);
        if (options.cascade === 'orphan') return;
        const owned = (await catalog.listEntries(ref.namespace)).filter(
          (record) => record.autoRegistrationGroup === name,
        );
        for (const record of owned) {
          const entryName = record.entry.metadata.name;
          if (await catalog.deleteEntry({ namespace: ref.namespace, name: entryName })) {
            context.out(`${QUALIFIED.WorkloadEntry} "${entryName}" deleted (owned by the group)\n`);
          }
        }
      },
    );
};
