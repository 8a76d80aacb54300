import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The page's files: index.html, and the bundle esbuild makes of dashboard/ui (Preact, uPlot and
 * the page's own code, one JavaScript and one CSS file with source maps). Nothing is fetched
 * from anywhere else at run time, so the page works offline.
 *
 * Built when the checkout is installed (`npm ci` runs `prepare`, which runs
 * `npm run build:dashboard`) into dashboard/dist/ (git-ignored), with a stamp of the sources
 * it was built from. At start the server serves dist/ when its stamp matches the sources, and
 * otherwise builds again (a checkout whose page changed since `npm ci`), when esbuild is there.
 */

// The page's sources and its build are the dashboard's (dashboard/ui, dashboard/dist); this
// server, which the CLI and the local runtime both start, only finds them there. The API's
// types (api-types.ts, beside this file) go into the page too.
const here = dirname(fileURLToPath(import.meta.url));
/**
 * In a checkout this file is lib/dashboard-server/, beside the dashboard's folder; in the npm
 * package it is bundled into cli/, and the built page is the package's dist/ (packaging/
 * npm-package.ts): one level up.
 */
const CHECKOUT_DASHBOARD = join(here, '..', '..', 'dashboard');
export const DASHBOARD_DIR = existsSync(join(CHECKOUT_DASHBOARD, 'ui'))
  ? CHECKOUT_DASHBOARD
  : join(here, '..');
export const UI_DIR = join(DASHBOARD_DIR, 'ui');
export const DIST_DIR = join(DASHBOARD_DIR, 'dist');
const API_TYPES = join(here, 'api-types.ts');
const STAMP_FILE = 'stamp.json';

export interface Asset {
  body: Buffer;
  type: string;
}

/** By URL path: `/`, `/assets/main.js`, ... */
export type Assets = ReadonlyMap<string, Asset>;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** A hash of every file the bundle is made from (the page's sources and the API's types). */
export async function sourceStamp(): Promise<string> {
  const hash = createHash('sha256');
  const files = [...(await listFiles(UI_DIR)), API_TYPES].sort();
  for (const file of files) {
    hash.update(relative(DASHBOARD_DIR, file));
    hash.update(await readFile(file));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Bundles dashboard/ui with esbuild (a devDependency: present in a checkout after `npm ci`). */
export async function buildAssets(): Promise<Map<string, Buffer>> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: { main: join(UI_DIR, 'main.tsx') },
    bundle: true,
    write: false,
    outdir: join(DIST_DIR, 'assets'),
    format: 'esm',
    target: ['es2022'],
    minify: true,
    sourcemap: 'linked',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const files = new Map<string, Buffer>();
  for (const file of result.outputFiles) {
    files.set(`/${relative(DIST_DIR, file.path)}`, Buffer.from(file.contents));
  }
  files.set('/index.html', await readFile(join(UI_DIR, 'index.html')));
  return files;
}

/** `npm run build:dashboard`: builds into dashboard/dist/ with the sources' stamp. */
export async function writeDist(files: Map<string, Buffer>, stamp: string): Promise<void> {
  // Built aside and renamed into place: a server starting meanwhile never reads half of it.
  const draft = `${DIST_DIR}.${process.pid}.tmp`;
  await rm(draft, { recursive: true, force: true });
  for (const [path, body] of files) {
    const target = join(draft, path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, body);
  }
  await writeFile(join(draft, STAMP_FILE), `${JSON.stringify({ stamp })}\n`);
  await rm(DIST_DIR, { recursive: true, force: true });
  await rename(draft, DIST_DIR);
}

async function readDist(): Promise<{ stamp: string; files: Map<string, Buffer> } | undefined> {
  try {
    const { stamp } = JSON.parse(await readFile(join(DIST_DIR, STAMP_FILE), 'utf8'));
    const files = new Map<string, Buffer>();
    for (const file of await listFiles(DIST_DIR)) {
      const path = `/${relative(DIST_DIR, file)}`;
      if (path !== `/${STAMP_FILE}`) files.set(path, await readFile(file));
    }
    return { stamp: String(stamp), files };
  } catch {
    return undefined;
  }
}

/**
 * The files to serve: dist/ when it was built from these sources, else a fresh build (kept in
 * dist/ for the next start when the checkout is writable). `notice` says what happened.
 */
export async function loadAssets(notice: (text: string) => void = () => {}): Promise<Assets> {
  const dist = await readDist();
  // The npm package (packaging/npm-package.ts) carries the built page and not its sources.
  if (dist && !existsSync(UI_DIR)) return served(dist.files);
  const stamp = await sourceStamp();
  if (dist?.stamp === stamp) return served(dist.files);
  let built: Map<string, Buffer>;
  try {
    built = await buildAssets();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_MODULE_NOT_FOUND') throw error;
    if (dist) {
      notice(
        'the dashboard page in dashboard/dist/ is older than its sources (esbuild is not installed to rebuild it)',
      );
      return served(dist.files);
    }
    throw new Error(
      "the dashboard's page is not built: run 'npm ci' (or 'npm run build:dashboard') in the checkout",
    );
  }
  await writeDist(built, stamp).catch(() =>
    notice('built the dashboard page in memory (dashboard/dist/ is not writable)'),
  );
  return served(built);
}

function served(files: Map<string, Buffer>): Assets {
  const assets = new Map<string, Asset>();
  for (const [path, body] of files) {
    const type = TYPES[extname(path)];
    if (type) assets.set(path === '/index.html' ? '/' : path, { body, type });
  }
  return assets;
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}
