import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Opens the dashboard's URL in the operator's browser, when this machine has one to open:
 * `$BROWSER` when set (the convention of many command-line tools), else the system's opener
 * (`open` on macOS, `start` on Windows, `xdg-open` on a Linux desktop). A server, or an SSH
 * session without a display, has none: the URL is printed either way.
 */
export interface BrowserCommand {
  command: string;
  args: string[];
}

export function browserCommand(
  url: string,
  platform: NodeJS.Platform,
  env: Record<string, string | undefined>,
  onPath: (name: string) => boolean,
): BrowserCommand | undefined {
  const chosen = env.BROWSER?.trim();
  if (chosen) {
    const [command = chosen, ...args] = chosen.split(/\s+/);
    return { command, args: [...args, url] };
  }
  if (platform === 'darwin') return { command: 'open', args: [url] };
  if (platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '""', url] };
  // Without a display, xdg-open would start a text browser in this terminal, or fail.
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY) return undefined;
  return onPath('xdg-open') ? { command: 'xdg-open', args: [url] } : undefined;
}

export function onPath(env: Record<string, string | undefined>): (name: string) => boolean {
  return (name) =>
    (env.PATH ?? '').split(delimiter).some((dir) => {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

/** Starts the browser on its own (it outlives nothing of ours); false when there is none. */
export function openBrowser(url: string, env: Record<string, string | undefined>): boolean {
  const chosen = browserCommand(url, process.platform, env, onPath(env));
  if (!chosen) return false;
  try {
    const child = spawn(chosen.command, chosen.args, { detached: true, stdio: 'ignore', env });
    child.on('error', () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}
