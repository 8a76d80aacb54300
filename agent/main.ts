import { startAgent } from './agent.ts';
import { AgentConfigError, loadAgentConfig, USAGE } from './config.ts';
import { createLogger } from './logger.ts';
import { versionLine } from './version.ts';

/**
 * `registrar-agent`: configuration errors exit 2 with the reason; SIGTERM/SIGINT close the
 * connection cleanly (the registrar runs $disconnect and marks the entry disconnected) and
 * exit 0, which is what systemd expects from `systemctl stop`.
 */
export async function main(argv: string[], env: Record<string, string | undefined>): Promise<void> {
  let config: ReturnType<typeof loadAgentConfig>;
  try {
    config = loadAgentConfig(argv, env);
  } catch (error) {
    if (!(error instanceof AgentConfigError)) throw error;
    process.stderr.write(`registrar-agent: ${error.message}\n`);
    process.exit(2);
  }
  if (config === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (config === 'version') {
    process.stdout.write(`${versionLine()}\n`);
    return;
  }
  const logger = createLogger({ format: config.logFormat, debug: config.debug });
  let agent: Awaited<ReturnType<typeof startAgent>>;
  try {
    agent = await startAgent(config, { logger });
  } catch (error) {
    logger.error((error as Error).message);
    process.exit(1);
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    // A second signal while closing means "now".
    if (stopping) process.exit(0);
    stopping = true;
    logger.info(`${signal} received; closing the connection`);
    void agent.stop().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
