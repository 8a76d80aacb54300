#!/usr/bin/env node
// Node 22 strips TypeScript types, so the agent runs from its sources without a build step.
import { main } from '../agent/main.ts';

await main(process.argv.slice(2), process.env);
