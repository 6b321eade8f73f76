#!/usr/bin/env node
// `taskstack` and `npm start`: the command line (cli.ts), bundled to plain JavaScript and run on bare Node.
import { fileURLToPath } from 'node:url';
import { importTypeScript } from '../core/bundle.mjs';

await importTypeScript(fileURLToPath(new URL('./cli.ts', import.meta.url)));
