/** Types of one-copy-per-package.mjs (plain JavaScript: the emulators' bundler runs it uncompiled). */
export declare function oneCopyPerPackage(lockfile: string): import('esbuild').Plugin;
