/**
 * TypeScript types from the OpenAPI documents (openapi-typescript), written to openapi/types/<name>.ts
 * formatted as biome formats them. `npx tsx contracts/generate-types.ts` rewrites them; a test fails
 * when a committed file is not what the documents generate, and contracts/code-types.ts makes
 * `tsc` (npm run lint) fail when the system's types and the documents' disagree.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { DOCUMENTS, documentPath, type Surface } from './validate.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const HEADER =
  '// Generated from the OpenAPI document by contracts/generate-types.ts (openapi-typescript); do not edit.\n';

export const typesPath = (surface: Surface) =>
  `openapi/types/${DOCUMENTS[surface].replace(/\.json$/, '.ts')}`;

/** The types file for one document, exactly as it should be committed. */
export async function generatedTypes(surface: Surface): Promise<string> {
  const source = HEADER + astToString(await openapiTS(pathToFileURL(documentPath(surface))));
  const formatted = spawnSync(
    fileURLToPath(new URL('../node_modules/.bin/biome', import.meta.url)),
    ['format', `--stdin-file-path=${typesPath(surface)}`],
    { cwd: root, input: source, encoding: 'utf8' },
  );
  if (formatted.status !== 0) throw new Error(`biome could not format the types: ${formatted.stderr}`);
  return formatted.stdout;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const surface of Object.keys(DOCUMENTS) as Surface[]) {
    writeFileSync(`${root}${typesPath(surface)}`, await generatedTypes(surface));
    console.log(`wrote ${typesPath(surface)}`);
  }
}
