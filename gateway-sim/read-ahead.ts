/**
 * The gateway's artifacts read ahead of its start, and the watchers that tell it of a change (reload).
 */
import { type FSWatcher, watch } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type GatewayConfig, loadArtifacts } from './artifacts.ts';

/** The gateway's options its artifacts depend on. */
interface ArtifactOptions {
  artifactsDir: string;
  namedValues: Record<string, string>;
}

/**
 * Watchers of the artifacts' folders: the artifacts folder itself, and the folders of the documents
 * they import from outside it (the OpenAPI files). Any change calls `onChange`.
 */
function artifactWatchers(dir: string) {
  const watchers = new Map<string, FSWatcher>();
  const self = {
    onChange: () => {},
    watch(files: string[]) {
      const folders = new Set(
        [dir, ...files.map((file) => dirname(file))].filter((f) => f === dir || !f.startsWith(`${dir}/`)),
      );
      for (const folder of folders)
        if (!watchers.has(folder))
          watchers.set(
            folder,
            watch(folder, { recursive: folder === dir }, () => self.onChange()),
          );
    },
    close() {
      for (const watcher of watchers.values()) watcher.close();
    },
  };
  return self;
}

/**
 * The artifacts, read with the options' named values as soon as the process has its options
 * (Emulator.load): the gateway starts once the functions host answers (its `default` key, useHostKey),
 * and reads them meanwhile. They are watched from then on; `start` reads them again if a file changed
 * since, or if its named values are not these (a host key renewed in an earlier run), and refuses the
 * start with its own read's error.
 */
export function readAhead(options: ArtifactOptions) {
  const dir = resolve(options.artifactsDir);
  const watchers = artifactWatchers(dir);
  let changed = false;
  watchers.onChange = () => {
    changed = true;
  };
  let config: GatewayConfig | undefined;
  try {
    config = loadArtifacts(dir, options.namedValues);
    watchers.watch(config.files);
  } catch {
    // Read again by the start, which refuses with that error.
  }
  const namedValues = JSON.stringify(Object.entries(options.namedValues));
  return {
    watchers,
    /** What was read ahead, if it is still what `options` would read now. */
    configFor: (now: ArtifactOptions) =>
      changed || JSON.stringify(Object.entries(now.namedValues)) !== namedValues ? undefined : config,
  };
}
