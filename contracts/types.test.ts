import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { generatedTypes, typesPath } from './generate-types.ts';
import { DOCUMENTS, type Surface } from './validate.ts';

const root = fileURLToPath(new URL('../', import.meta.url));

describe('the types generated from the OpenAPI documents', () => {
  it.each(
    Object.keys(DOCUMENTS) as Surface[],
  )('%s: the committed types are what the document generates (npx tsx contracts/generate-types.ts)', async (surface) => {
    expect(readFileSync(`${root}${typesPath(surface)}`, 'utf8')).toBe(await generatedTypes(surface));
  });
});
