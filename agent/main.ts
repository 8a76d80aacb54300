import { startAgent } from './agent.ts';
import { AgentConfigError, loadAgentConfig, USAGE } from './config.ts';
import { createLogger } from './logger.ts';
import { reclaimStartupMemory } from './memory-reclaim.ts';
import { versionLine } from './version.ts';

/**
 * `registrar-agent`: configuration errors exit 2 with the reason; SIGTERM/SIGINT drain (the
 * registrar marks the entry Draining, the agent waits the drain delay) and then close the
 * connection cleanly (the registrar runs $disconnect and marks the entry disconnected) and
 * exit 0, which is what systemd expects from `systemctl stop`. A second signal closes at once.
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
    agent = await startAgent(config, { logger, reclaimMemory: () => reclaimStartupMemory() });
  } catch (error) {
    logger.error((error as Error).message);
    process.exit(1);
  }
  let signals = 0;
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals === 1) {
      logger.info(
        config.timing.drainDelayMs > 0
          ? `${signal} received; draining, then closing the connection`
          : `${signal} received; closing the connection`,
      );
      void agent.drainAndStop().then(() => process.exit(0));
    } else if (signals === 2) {
      // A second signal during the drain means "now": still a clean close (1000).
      logger.info(`${signal} received again; closing the connection now`);
      void agent.stop().then(() => process.exit(0));
    } else {
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
