/**
 * Maps a stack trace logged by a deployed function back to the TypeScript sources, with the
 * source map that ships beside the bundle (the functions run without --enable-source-maps, so
 * their logged stacks point into the minified `index.mjs`).
 *
 *   node scripts/decode-stack.ts cdk.out/asset.<hash>/index.mjs.map < stack.txt
 *
 * Every `index.mjs:<line>:<column>` in the input is followed by `[-> <source>:<line>:<column>]`.
 * Uses Node's own source-map reader (`node:module` SourceMap).
 */
import { readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { text } from 'node:stream/consumers';

const FRAME = /index\.mjs:(\d+):(\d+)/g;

/** The input with each bundle position annotated with its original one. */
export function decodeStack(stack: string, payload: SourceMapPayload): string {
  const map = new SourceMap(payload);
  return stack.replace(FRAME, (match, line: string, column: string) => {
    // Stack traces count lines and columns from 1; the map from 0.
    const origin = map.findOrigin(Number(line), Number(column));
    if (!('fileName' in origin)) return match;
    const source = origin.fileName.replace(/^.*?(?=(functions|lib|node_modules)\/)/, '');
    return `${match} [-> ${source}:${origin.lineNumber}:${origin.columnNumber}]`;
  });
}

if (import.meta.main) {
  const mapFile = process.argv[2];
  if (!mapFile) {
    console.error(
      'usage: node scripts/decode-stack.ts <index.mjs.map> < stack.txt  (the map is in the function asset: cdk.out/asset.<hash>/)',
    );
    process.exit(2);
  }
  const payload = JSON.parse(readFileSync(mapFile, 'utf8')) as SourceMapPayload;
  process.stdout.write(decodeStack(await text(process.stdin), payload));
}
