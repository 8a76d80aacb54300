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
// <compile cache dir or tmpdir>/registrar-ts.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { getCompileCacheDir, registerHooks, stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

function cacheDir() {
  const base = getCompileCacheDir?.() ?? join(tmpdir(), 'node-compile-cache');
  const dir = join(base, 'registrar-ts');
  try {
    mkdirSync(dir, { recursive: true });
    return dir;
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
      writeFileSync(partial, code);
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
