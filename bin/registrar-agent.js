#!/usr/bin/env node
// Node strips the TypeScript types, so the agent runs from its sources without a build step.
// The Node.js version is checked first, before any TypeScript loads (an older Node would stop
// with a loader stack trace). packaging/build-agent.sh bundles this file into
// registrar-agent.mjs, already JavaScript, which needs only Node 22.
import { exitUnlessSupportedNode } from '../scripts/node-version.js';

const bundled = !import.meta.url.endsWith('/bin/registrar-agent.js');
exitUnlessSupportedNode({ program: 'registrar-agent', bundled });
// From a checkout, each module's stripped types are kept on disk (scripts/ts-cache.js). Not a
// literal, so the bundle (already JavaScript) does not carry it.
if (!bundled) await import(new URL('../scripts/ts-cache.js', import.meta.url).href);
const { main } = await import('../agent/main.ts');

await main(process.argv.slice(2), process.env);
