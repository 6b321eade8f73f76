/** Types of bundle.mjs (plain JavaScript, since it runs before anything is compiled). */
export declare function bundle(
  entry: string,
  options?: { packages?: 'external' | 'bundle'; external?: string[] },
): Promise<string>;
export declare function importTypeScript(entry: string): Promise<Record<string, unknown>>;
export declare function bundleInputs(entry: string, packages?: 'external' | 'bundle'): string[];
