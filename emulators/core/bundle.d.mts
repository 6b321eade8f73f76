/** Types of bundle.mjs (plain JavaScript, since it runs before anything is compiled). */
export declare function bundle(
  entry: string,
  options?: {
    packages?: 'external' | 'bundle';
    external?: string[];
    alias?: Record<string, string>;
    onBuild?: () => void;
  },
): Promise<string>;
export declare function importTypeScript(entry: string): Promise<Record<string, unknown>>;
export declare function bundleInputs(entry: string, packages?: 'external' | 'bundle'): string[];
export declare function bundleEntries(
  name: string,
  dir: string,
  entries: Record<string, string>,
  onBuild?: () => void,
): Promise<Record<string, string>>;
export declare function importModule(specifier: string): Promise<Record<string, unknown>>;
export declare function saveCodeCache(): void;
export declare function stopBuilding(): Promise<void>;
export declare function fileClock(dir: string): number;
export declare function inputTimes(paths: string[], began: number): number[];
export declare function changedSince(paths: string[], times: unknown): string[];
