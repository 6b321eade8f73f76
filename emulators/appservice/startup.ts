/**
 * Which file App Service on Linux runs for a Node app, by the rule of its startup script generator
 * (Oryx), without a startup command of its own: package.json's `start` script (`npm start`), else its
 * `main` (`node <main>`), else the first of bin/www, server.js, app.js, index.js, hostingstart.js.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const CANDIDATES = ['bin/www', 'server.js', 'app.js', 'index.js', 'hostingstart.js'];

/**
 * The file to run, as given (relative to the app's folder). A start script other than `node <file>` is
 * refused with its text: the local App Service runs the app in its own process, not through npm.
 */
export function startFile(appDir: string): string {
  const path = join(appDir, 'package.json');
  const manifest = (existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : {}) as {
    main?: unknown;
    scripts?: { start?: unknown };
  };
  const start = manifest.scripts?.start;
  if (typeof start === 'string' && start.trim()) {
    const file = /^node\s+([^-\s]\S*)$/.exec(start.trim())?.[1];
    if (!file)
      throw new Error(
        `${path}: package.json's start script "${start}" is what App Service runs (npm start); the local App Service runs only a start script of the form node <file>`,
      );
    return file;
  }
  if (typeof manifest.main === 'string' && manifest.main) return manifest.main;
  const found = CANDIDATES.find((file) => existsSync(join(appDir, file)));
  if (!found)
    throw new Error(
      `${appDir} has no start script, no main and none of ${CANDIDATES.join(', ')}: App Service would not know what to run`,
    );
  return found;
}

/** The absolute path `node <file>` runs in `appDir` (Node resolves a folder or a name without extension). */
export function resolveStartFile(appDir: string, file: string): string {
  try {
    return createRequire(join(appDir, 'package.json')).resolve(resolve(appDir, file));
  } catch {
    throw new Error(`${appDir}: App Service would run ${file}, which does not exist`);
  }
}
