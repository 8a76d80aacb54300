// The shape of one agent setting: settings.ts and sidecar-settings.ts both list settings of
// this shape, and settings.ts lists the sidecar's too, so the shape lives below both.

/**
 * How a setting is given on the command line: `value` (`--url <url>`), `list` (repeatable;
 * comma-separated in a variable), `switch` (`--debug` sets true) or `off-switch` (`--no-imds`
 * sets false). A variable always carries the setting's own value (`REGISTRAR_AGENT_IMDS=false`).
 */
export type SettingKind = 'value' | 'list' | 'switch' | 'off-switch';

export interface AgentSetting {
  /** The YAML key; nested keys are written `timing.pingInterval`. */
  key: string;
  /** The flag without its dashes; none when a flag would be wrong (a secret shows in `ps`). */
  flag?: string;
  /** How the flag's value is written in `--help` (`<url>`); none for a switch. */
  arg?: string;
  env?: string;
  kind: SettingKind;
  /** As `--help` and docs/agent.md show it. */
  default: string;
  help: string;
}
