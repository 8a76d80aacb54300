/**
 * The entry of the agent's self-contained executable (packaging/agent-executable.ts): the same
 * program as bin/registrar-agent.js, run by the Node.js built into the executable as a single
 * executable application. Its main script must be CommonJS, so there is no top-level await:
 * an error main() does not handle is an unhandled rejection, which Node reports with its stack
 * and exit code 1, as the bin's top-level await does. No Node.js version to check: the
 * executable carries its own. `process.argv` is [executable, executable, ...flags] there too.
 */
import { main } from './main.ts';

void main(process.argv.slice(2), process.env);
