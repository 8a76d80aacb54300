// Keeps what Node's type stripping makes of each TypeScript module of the checkout, on disk,
// keyed by the module's source and the Node version: `registrar`, `registrar-agent` and
// `npm start` from a checkout then strip a file once, not on every start. Node 22 caches the
// compiled code (enableCompileCache) but strips the types again each run: 45% of a CLI start's
// CPU (`registrar completion bash`: 0.43 s of user CPU without this, 0.15 s with it; the test
// suite starts the CLI, the local runtime and agents hundreds of times).
//
// Plain JavaScript, loaded before any TypeScript. Only modules Node itself would strip as ES
// modules (format `module-typescript`, outside node_modules) are served; anything else, and any
// file the stripper refuses (Node then reports it as it always does), goes to Node's own loader.
// Strip mode keeps every line and column, so stack traces point where they always did. Off with
// NODE_DISABLE_COMPILE_CACHE=1, like the compile cache; the directory is
// <compile cache dir or tmpdir>/registrar-ts, used only while no other user can write to it.
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { getCompileCacheDir, registerHooks, stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The cache directory, or undefined when another user could write to it. What it holds is run
 * as code, and `registrar` may run as root: a shared temp dir (/tmp/node-compile-cache, made by
 * whoever ran Node first) must not let another user plant a module. So the directory must be
 * this user's own (made 0700) and writable by no one else, in a parent owned by this user or
 * root that no one else may rename it in; otherwise Node strips the types itself, as without
 * the cache.
 */
function cacheDir() {
  const base = getCompileCacheDir?.() ?? join(tmpdir(), 'node-compile-cache');
  const dir = join(base, 'registrar-ts');
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const parent = lstatSync(base);
    const own = lstatSync(dir);
    const parentSafe =
      parent.isDirectory() &&
      (parent.uid === uid || parent.uid === 0) &&
      ((parent.mode & 0o022) === 0 || (parent.mode & 0o1000) !== 0);
    const ownSafe = own.isDirectory() && own.uid === uid && (own.mode & 0o022) === 0;
    return parentSafe && ownSafe ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** Node's stripper without its one-time ExperimentalWarning (the built-in stripping prints none). */
function strip(source) {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

function served(dir, url) {
  const source = readFileSync(fileURLToPath(url), 'utf8');
  const key = createHash('sha256').update(process.version).update('\0').update(source);
  const file = join(dir, `${key.digest('base64url')}.js`);
  try {
    return readFileSync(file, 'utf8');
  } catch {
    const code = strip(source);
    // Written aside and renamed: a process reading it at the same time sees all of it or none.
    const partial = `${file}.${process.pid}`;
    try {
      writeFileSync(partial, code, { mode: 0o600 });
      renameSync(partial, file);
    } catch {
      // A cache that cannot be written only costs the next start its stripping.
    }
    return code;
  }
}

if (
  process.env.NODE_DISABLE_COMPILE_CACHE !== '1' &&
  typeof registerHooks === 'function' &&
  typeof stripTypeScriptTypes === 'function'
) {
  const dir = cacheDir();
  if (dir) {
    registerHooks({
      load(url, context, nextLoad) {
        if (
          context.format !== 'module-typescript' ||
          !url.startsWith('file:') ||
          url.includes('/node_modules/')
        ) {
          return nextLoad(url, context);
        }
        let source;
        try {
          source = served(dir, url);
        } catch {
          return nextLoad(url, context);
        }
        return { format: 'module', source, shortCircuit: true };
      },
    });
  }
}
