import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { writeFileAtomic } from '../core/files.ts';
import { portIsFree } from './ports.ts';

/**
 * stack.json: the machine-readable description of the running stack, for tools, tests and scenarios.
 * It holds keys, so it is written with mode 0600, and only once every component is healthy.
 */
export interface StackDescription {
  pid: number;
  dataDir: string;
  inMemory: boolean;
  controlUrl: string;
  /** The spec's addresses; `baseUrl`, `webBaseUrl` and `gatewayUrl` appear with their components. */
  authUrl: string;
  baseUrl?: string;
  webBaseUrl?: string;
  gatewayUrl?: string;
  /** The gateway's developer portal. */
  portalUrl?: string;
  /** The directory's test users and their generated passwords (sign-in to web app B, the portal). */
  testUsers?: { userPrincipalName: string; password: string; displayName: string; mail?: string }[];
  /** Each app of system/apps.json the stack runs, by name. */
  apps: Record<string, { url: string }>;
  functionKey: string;
  masterKey: string;
  subscriptionKey: string;
  connections: Record<string, string>;
  secrets: Record<string, string>;
  /** Each app's managed identity, as its IDENTITY_ENDPOINT / IDENTITY_HEADER settings. */
  identities: Record<
    string,
    { principalId: string; clientId: string; IDENTITY_ENDPOINT: string; IDENTITY_HEADER: string }
  >;
  endpoints: Record<string, Record<string, string>>;
  logs: Record<string, string>;
}

export const stackFilePath = (dataDir: string) => join(dataDir, 'stack.json');

export function writeStackFile(description: StackDescription): void {
  writeFileAtomic(stackFilePath(description.dataDir), `${JSON.stringify(description, null, 2)}\n`);
}

export function removeStackFile(dataDir: string): void {
  rmSync(stackFilePath(dataDir), { force: true });
}

function readStackFile(dataDir: string): StackDescription | undefined {
  try {
    return JSON.parse(readFileSync(stackFilePath(dataDir), 'utf8')) as StackDescription;
  } catch {
    return undefined;
  }
}

/** The fields of /proc/<pid>/stat after the command name (the first is the state); undefined without it. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Whether a process runs: one that has exited but not yet been reaped by its parent (a zombie) does not. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: alive, but someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // No /proc here: kill(0) is all we know.
  return statFields(pid)?.[0] !== 'Z';
}

/**
 * The stack described in `dataDir`, if its launcher is still alive: the process holding the directory's
 * lock (a pid alone may name another process since, after a reboot).
 */
export function runningStack(dataDir: string): StackDescription | undefined {
  const description = readStackFile(dataDir);
  return description && lockHolder(dataDir) === description.pid ? description : undefined;
}

const lockPath = (dataDir: string) => join(dataDir, 'stack.lock');

/**
 * When a process started (clock ticks after boot, field 22 of /proc/<pid>/stat): with its pid it names
 * one process, where a pid alone is reused (after a reboot, often); undefined without /proc.
 */
const startTimeOf = (pid: number): string | undefined => statFields(pid)?.[19];

/**
 * The live process that holds `dataDir` (a launcher, from the first moment of its start to its stop):
 * the lock's pid, if that process runs and started when the lock says (another one with its pid is not
 * the launcher, which `taskstack stop` would otherwise signal).
 */
export function lockHolder(dataDir: string): number | undefined {
  let pid: number;
  let started: string | undefined;
  try {
    const [pidText, startText] = readFileSync(lockPath(dataDir), 'utf8').trim().split(' ');
    pid = Number(pidText);
    started = startText;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return undefined;
  const now = started === undefined ? undefined : startTimeOf(pid);
  return now === undefined || now === started ? pid : undefined;
}

/** The first words of the `.gitignore` every start writes into its data directory. */
const GITIGNORE_MARK = '# Made by taskstack';

/**
 * A data directory holds keys and a CA's private key: its own `.gitignore` of `*` keeps it out of any
 * repository it is made in (`--data-dir data` in a project), as Python's venv does. One the user wrote
 * stays as it is.
 */
function keepOutOfGit(dataDir: string): void {
  try {
    writeFileSync(
      join(dataDir, '.gitignore'),
      `${GITIGNORE_MARK}: keys and state, never to be committed.\n*\n`,
      {
        flag: 'wx',
      },
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * Takes `dataDir` for this process's launcher. stack.json appears only once a stack is ready: two starts
 * at once (two terminals, a script) each ran their own components on the same state. Throws, naming the
 * holder, while a live process holds it; takes it over from a dead one (killed, the machine stopped).
 * Answers how to let go.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = lockPath(dataDir);
  // Written whole beside it, then linked in one step: the lock never exists without its pid (and, where
  // there is /proc, the process's start time).
  const mine = `${path}.${process.pid}.tmp`;
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    keepOutOfGit(dataDir);
    writeFileSync(mine, [process.pid, startTimeOf(process.pid)].filter(Boolean).join(' '), { mode: 0o600 });
  } catch (error) {
    // The first write to the directory: say which directory, not only the system call that failed.
    const { code, message } = error as NodeJS.ErrnoException;
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? 'a file is in its way' : message;
    throw new Error(
      `cannot use ${dataDir} as the data directory (${why}); name another with --data-dir or TASKSTACK_DATA_DIR`,
    );
  }
  try {
    for (;;) {
      try {
        linkSync(mine, path);
        return () => rmSync(path, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = lockHolder(dataDir);
      if (holder !== undefined)
        throw new Error(`a stack is already running on ${dataDir} (pid ${holder}); stop it first`);
      rmSync(path, { force: true });
    }
  } finally {
    rmSync(mine, { force: true });
  }
}

/** How long the components of a stack whose launcher died may take to let go of their ports. */
const ORPHANS_GRACE_MS = 10_000;

/**
 * A stack.json whose launcher is dead (killed, or the machine stopped): its components exit by
 * themselves within a second of losing the launcher. Waits until they have let go of the ports it
 * names, removes the file, and says what it found; undefined when there was nothing stale.
 */
export async function clearStaleStack(dataDir: string): Promise<string | undefined> {
  const stale = readStackFile(dataDir);
  if (!stale || processAlive(stale.pid)) return undefined;
  const ports = Object.values(stale.endpoints ?? {})
    .flatMap((named) => Object.values(named))
    .flatMap((url) => /^\w+:\/\/127\.0\.0\.1:(\d+)/.exec(url)?.[1] ?? [])
    .map(Number);
  const deadline = Date.now() + ORPHANS_GRACE_MS;
  let held = ports;
  while (held.length && Date.now() < deadline) {
    const free = await Promise.all(held.map(portIsFree));
    held = held.filter((_, i) => !free[i]);
    if (held.length) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  removeStackFile(dataDir);
  return `found stack.json of a stack that is no longer running (pid ${stale.pid}, not stopped cleanly); replaced it${
    held.length ? `; ports ${held.join(', ')} are still held` : ''
  }`;
}

/**
 * Why `taskstack reset` must not remove `dir`, else undefined: it is, or holds, the working directory,
 * the project or the home directory (`--data-dir .`, `..`, `~`), which no data directory does.
 */
export function removalRefusal(
  dir: string,
  places: { cwd: string; project: string; home: string },
): string | undefined {
  const holds = (path: string) => {
    const inside = relative(dir, path);
    return inside === '' || (inside !== '..' && !inside.startsWith('../') && !isAbsolute(inside));
  };
  const named = [
    ['the working directory', places.cwd],
    ['the project', places.project],
    ['the home directory', places.home],
  ] as const;
  const held = named.find(([, path]) => holds(path));
  return held && `it holds ${held[0]} ${held[1]}`;
}

/**
 * Why `taskstack reset` must not remove `dir` as a data directory, else undefined: it is a file, or a
 * folder no start made (a mistyped `--data-dir src` would take the user's sources). A start writes its
 * `.gitignore` and keys.json first; an empty folder is a start that failed at once.
 */
export function notDataDirectory(dir: string): string | undefined {
  if (!statSync(dir).isDirectory()) return 'it is not a directory';
  const entries = readdirSync(dir);
  const marked = () => {
    try {
      return readFileSync(join(dir, '.gitignore'), 'utf8').startsWith(GITIGNORE_MARK);
    } catch {
      return false;
    }
  };
  if (entries.length === 0 || entries.includes('keys.json') || marked()) return undefined;
  return 'it is not a data directory (no keys.json, no .gitignore made by taskstack)';
}
