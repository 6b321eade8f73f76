#!/usr/bin/env node
// `taskstack` and `npm start`: the command line (cli.ts), bundled with its packages to plain JavaScript
// and run on bare Node (loading the packages module by module cost every command a third of a second).
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundle } from '../core/bundle.mjs';

const cli = fileURLToPath(new URL('./cli.ts', import.meta.url));
const main = await bundle(cli, { packages: 'bundle' }).catch((/** @type {Error} */ error) => {
  console.error(`taskstack: ${error.message}`);
  process.exit(1);
});
await import(pathToFileURL(main).href);
