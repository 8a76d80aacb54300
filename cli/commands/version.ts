import type { Command } from 'commander';
import { printsObjects, serializeObject } from '../object-output.ts';
import { type OutputSpec, outputOption } from '../output-option.ts';
import { projectVersion } from '../version.ts';
import type { CommandRegistration } from './context.ts';

interface VersionOptions {
  client?: boolean;
  output: OutputSpec;
}

/**
 * `registrar version`, as `kubectl version`: this CLI's release and the registrar's, which is
 * the release that last ran on the registry table (its schema record: `npm start` and each
 * deploy's sweeper write it), and the newest that ever did (a rollback shows both). Without a
 * reachable registry the client's line is printed, the error said, and the exit code is 1.
 */
export const registerVersion: CommandRegistration = (program, context) => {
  program
    .command('version')
    .description("print this CLI's release and the registrar's")
    .option('--client', "only this CLI's release (reads nothing)")
    .addOption(outputOption(['json', 'yaml']))
    .action(async (options: VersionOptions, command: Command) => {
      const client = projectVersion();
      let registrar: { release: string; newest: string; schema: number } | undefined;
      let problem: unknown;
      if (!options.client) {
        try {
          const { schema } = await context.tableSchema(command);
          const record = await schema.read();
          if (record) {
            registrar = {
              release: record.lastRunBy,
              newest: record.writtenBy,
              schema: record.schema,
            };
          } else
            problem = new Error(
              'the registry table has no schema record: no registrar has run on it yet',
            );
        } catch (error) {
          problem = error;
        }
      }
      const { output } = options;
      if (printsObjects(output)) {
        context.out(
          serializeObject(output, {
            clientVersion: client,
            ...(registrar
              ? {
                  registrarVersion: registrar.release,
                  newestRegistrarVersion: registrar.newest,
                  tableSchema: registrar.schema,
                }
              : {}),
          }),
        );
      } else {
        context.out(`Client Version: ${client}\n`);
        if (registrar) {
          const newer =
            registrar.newest !== registrar.release
              ? ` (the table was written by ${registrar.newest})`
              : '';
          context.out(`Registrar Version: ${registrar.release}${newer}\n`);
        }
      }
      if (problem !== undefined) throw problem;
    });
};
