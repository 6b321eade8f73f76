/** Helpers for the launcher's tests: the CLI as a user runs it, ports, processes. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadApps } from '../core/apps.ts';
import { waitFor } from '../core/testing.ts';
import { serviceNames } from '../registry.ts';
import { processAlive, stackFilePath } from './stackfile.ts';

/** Every component a full stack runs: the services and one per app of system/apps.json. */
export const everyComponent = [...serviceNames, ...Object.keys(loadApps())];

/** `node taskstack.mjs …`: the CLI as `npm start` and the `taskstack` bin run it. */
export const cli = (...args: string[]) => [join(import.meta.dirname, 'taskstack.mjs'), ...args];

/** Every port the stack's endpoints name. */
export const portsOf = (endpoints: Record<string, Record<string, string>>) =>
  Object.values(endpoints)
    .flatMap((named) => Object.values(named))
    .filter((value) => /^\w+:\/\/127\.0\.0\.1:\d+/.test(value))
    .map((url) => Number(new URL(url).port));

export { accepts } from '../core/http.ts';

export const alive = (pid: number | undefined) => pid !== undefined && processAlive(pid);

/** Every process below `pid` (children, grandchildren …), read from /proc. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the 2nd field after the command name in parentheses (which may hold spaces).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of parents.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** `taskstack start` in a process group of its own, as a terminal runs it: pid = process group id. */
export interface CliStack {
  child: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  exited: Promise<number | null>;
  description(): { endpoints: Record<string, Record<string, string>>; pid: number };
}

export async function startCli(dataDir: string, ...args: string[]): Promise<CliStack> {
  const child = spawn(process.execPath, cli('start', '--data-dir', dataDir, ...args), {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk;
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  await waitFor(
    'taskstack is ready',
    () => {
      if (gone) throw new Error(`taskstack start exited:\n${output}`);
      return output.includes('taskstack is ready');
    },
    60_000,
  );
  return {
    child,
    output: () => output,
    exited,
    description: () => JSON.parse(readFileSync(stackFilePath(dataDir), 'utf8')),
  };
}

/** Runs a `taskstack` command to its end without blocking this process (which may host the stack). */
export function runCli(
  ...args: string[]
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, cli(...args), { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}
