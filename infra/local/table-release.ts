import type { Dependencies } from '../../lib/dependencies.ts';
import { runMigrations } from '../../lib/registration/run-migrations.ts';
import { RELEASE } from '../../lib/release.ts';

/**
 * At `npm start`, before anything starts: refuses a table written by a release this one cannot
 * read (IncompatibleTableError names both: docs/deploy.md, rolling back), and records that this
 * release runs on it (`CONFIG / schema`). Pending migrations are left to the sweeper, as on
 * AWS, so a large table does not delay the start.
 */
export async function recordRelease(deps: Dependencies): Promise<void> {
  await runMigrations({
    schema: deps.schema,
    migrations: deps.migrations,
    release: RELEASE,
    now: deps.now,
    outOfTime: () => true,
  });
}
