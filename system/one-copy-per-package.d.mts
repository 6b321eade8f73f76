/** Types of one-copy-per-package.mjs (plain JavaScript, loadable before anything is compiled). */
export declare function oneCopyPerPackage(lockfile: string): import('esbuild').Plugin;
export declare function escapeRegExp(text: string): string;
