/**
 * Reading artifact files: JSON and policy XML, with named values (`{{Name}}`) resolved from the
 * environment's values. Every problem is an ArtifactError naming the file (and line, for XML).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { z } from 'zod';
import { ArtifactError } from './errors.ts';
import { namedValuesFile } from './schemas.ts';
import { parseXml, type XmlElement, XmlError } from './xml.ts';

const NAMED_VALUE = /\{\{([^{}]*)\}\}/g;

/** `dir` is the system/gateway folder; files are named relative to the repository holding it. */
export function createReader(dir: string, namedValues: Record<string, string>) {
  const root = dirname(dirname(resolve(dir)));
  const files: string[] = [];
  const show = (file: string) => relative(root, file);
  /** Reads a JSON file and checks it against `schema`, naming the first property that does not fit. */
  const readJson = <Schema extends z.ZodType>(file: string, schema: Schema): z.output<Schema> => {
    files.push(file);
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      const reason = (error as NodeJS.ErrnoException).code
        ? 'cannot be read'
        : `invalid JSON: ${(error as Error).message}`;
      throw new ArtifactError(show(file), undefined, undefined, reason);
    }
    const checked = schema.safeParse(value);
    if (checked.success) return checked.data;
    const issue = checked.error.issues[0];
    throw new ArtifactError(
      show(file),
      undefined,
      undefined,
      `${issue?.path.join('.') || '(top)'}: ${issue?.message}`,
    );
  };

  // Named values: declared in named-values.json, valued by the environment.
  const declared = readJson(join(dir, 'named-values.json'), namedValuesFile).namedValues;
  const values = new Map<string, string>();
  for (const { name, properties } of declared) {
    if (properties.secret && properties.value !== undefined)
      throw new ArtifactError(
        show(join(dir, 'named-values.json')),
        undefined,
        undefined,
        `secret named value ${name} must not carry a literal value`,
      );
    const value = namedValues[name] ?? properties.value;
    if (value !== undefined) values.set(name, value);
  }
  const resolveNamed = (text: string, file: string, line?: number, policy?: string) =>
    text.replace(NAMED_VALUE, (_whole, name: string) => {
      const value = values.get(name.trim());
      if (value !== undefined) return value;
      const known = declared.some((entry) => entry.name === name.trim());
      throw new ArtifactError(
        show(file),
        line,
        policy,
        known
          ? `named value ${name} has no value (give it in the gateway's namedValues option)`
          : `named value ${name} is not declared in named-values.json`,
      );
    });
  const resolveDeep = (value: unknown, file: string): unknown =>
    typeof value === 'string'
      ? resolveNamed(value, file)
      : Array.isArray(value)
        ? value.map((item) => resolveDeep(item, file))
        : value && typeof value === 'object'
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveDeep(v, file)]))
          : value;

  const xml = (file: string, rootName: string): XmlElement => {
    files.push(file);
    let element: XmlElement;
    try {
      element = parseXml(readFileSync(file, 'utf8'));
    } catch (error) {
      if (error instanceof XmlError)
        throw new ArtifactError(show(file), error.line, undefined, error.message);
      throw error;
    }
    if (element.name !== rootName)
      throw new ArtifactError(
        show(file),
        element.line,
        element.name,
        `the root element must be <${rootName}>`,
      );
    const substitute = (node: XmlElement) => {
      for (const [name, value] of Object.entries(node.attributes))
        node.attributes[name] = resolveNamed(value, file, node.line, node.name);
      node.text = resolveNamed(node.text, file, node.line, node.name);
      node.children.forEach(substitute);
    };
    substitute(element);
    return element;
  };

  return { files, show, readJson, resolveNamed, resolveDeep, xml };
}
export type Reader = ReturnType<typeof createReader>;
