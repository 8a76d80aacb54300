/**
 * `node --import ./scripts/require-node.js <entry>.ts` (npm start, npm run bench) and
 * `node scripts/require-node.js && ...` (npm test): refuses an unsupported Node.js with one
 * line before the TypeScript entry point loads. Plain JavaScript: see node-version.js.
 */
import { exitUnlessSupportedNode } from './node-version.js';

exitUnlessSupportedNode();
