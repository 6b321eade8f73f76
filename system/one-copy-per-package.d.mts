/** Types of one-copy-per-package.mjs (plain JavaScript, loadable before anything is compiled). */
export declare function oneCopyPerPackage(lockfile: string): import('esbuild').Plugin;
