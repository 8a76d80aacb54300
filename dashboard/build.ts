/**
 * `npm run build:dashboard` (and `prepare`, which `npm ci` runs): bundles the dashboard's page
 * with esbuild into dashboard/dist/, which `registrar dashboard` serves.
 */
import { relative } from 'node:path';
import { buildAssets, DIST_DIR, sourceStamp, writeDist } from '../lib/dashboard-server/assets.ts';

const started = performance.now();
const files = await buildAssets();
await writeDist(files, await sourceStamp());
const bytes = [...files.values()].reduce((sum, body) => sum + body.length, 0);
process.stdout.write(
  `dashboard page built into ${relative(process.cwd(), DIST_DIR) || DIST_DIR}: ${files.size} files, ${Math.round(bytes / 1024)} KB, ${Math.round(performance.now() - started)} ms\n`,
);
