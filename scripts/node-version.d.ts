// Types of node-version.js, which stays plain JavaScript so that an old Node can run it.
export declare const MINIMUM_NODE: string;
export declare const ENGINES_RANGE: string;
export interface NodeVersionCheck {
  program?: string;
  version?: string;
  execPath?: string;
  typescript?: string | false | undefined;
  bundled?: boolean;
}
export declare function nodeVersionProblem(check?: NodeVersionCheck): string | undefined;
export declare function exitUnlessSupportedNode(check?: NodeVersionCheck): void;
