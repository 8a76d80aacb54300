import type { EpochMillis } from '../domain/model.ts';
import type { NamespaceSettings } from '../domain/namespace-settings.ts';

/** The fields of a namespace's settings an operator sets or unsets. */
export type SettingsField =
  | 'maxEntries'
  | 'connectRate'
  | 'networks'
  | 'addressRanges'
  | 'heartbeatChecks';

export interface SettingsChange {
  set: Partial<Pick<NamespaceSettings, SettingsField>>;
  /** Back to the default (any network, any address, the default quota). */
  unset: readonly SettingsField[];
}

/** What the connect path reads: one namespace's settings, or undefined (all defaults). */
export interface NamespaceSettingsReader {
  /** Eventually consistent unless asked (the connect path caches it anyway; the CLI asks). */
  getSettings(namespace: string, consistent?: boolean): Promise<NamespaceSettings | undefined>;
}

/** What the operator CLI and the projector need on top. */
export interface NamespaceSettingsStore extends NamespaceSettingsReader {
  /** Sets and unsets fields, keeping the others; returns the settings as stored. */
  updateSettings(
    namespace: string,
    change: SettingsChange,
    at: EpochMillis,
  ): Promise<NamespaceSettings>;
  /** Every namespace with settings, by name. */
  listSettings(): Promise<NamespaceSettings[]>;
  /** Back to every default; false when the namespace had no settings. */
  deleteSettings(namespace: string): Promise<boolean>;
}
