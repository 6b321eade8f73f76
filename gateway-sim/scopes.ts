/**
 * Policy scopes: the policy files of `policies/` (global, product, API, operation) and the fragments of
 * `policy-fragments/`, composed into each operation's effective policy with `<base />` inserting the
 * enclosing scope and `<include-fragment>` a fragment.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ArtifactError } from './errors.ts';
import { compileSection, SECTIONS, type Section, type Step } from './policies.ts';
import type { Reader } from './reader.ts';
import type { XmlElement } from './xml.ts';

export type Pipeline = Record<Section, Step[]>;
export type Layer = { file: string; scope: string; sections: Partial<Record<Section, XmlElement[]>> };

export function createScopes(reader: Reader, dir: string) {
  const { show, xml } = reader;
  // Policy fragments: compiled where they are included (the section decides what they may hold).
  const fragmentDir = join(dir, 'policy-fragments');
  const fragments = new Map<string, { file: string; element: XmlElement }>();
  for (const entry of existsSync(fragmentDir) ? readdirSync(fragmentDir) : []) {
    const file = join(fragmentDir, entry);
    if (!entry.endsWith('.xml'))
      throw new ArtifactError(show(file), undefined, undefined, 'not a policy fragment (.xml)');
    fragments.set(entry.slice(0, -4), { file, element: xml(file, 'fragment') });
  }

  const policyFiles = new Set<string>();
  const policyDir = join(dir, 'policies');
  const walk = (folder: string) => {
    for (const entry of existsSync(folder) ? readdirSync(folder, { withFileTypes: true }) : []) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else policyFiles.add(path);
    }
  };
  walk(policyDir);
  const layer = (file: string, scope: string): Layer | undefined => {
    if (!policyFiles.delete(file)) return undefined;
    const element = xml(file, 'policies');
    const sections: Layer['sections'] = {};
    for (const child of element.children) {
      if (!SECTIONS.includes(child.name as Section))
        throw new ArtifactError(
          show(file),
          child.line,
          child.name,
          'not a policy section (inbound, backend, outbound, on-error)',
        );
      if (sections[child.name as Section])
        throw new ArtifactError(show(file), child.line, child.name, 'section repeated');
      sections[child.name as Section] = child.children;
    }
    return { file, scope, sections };
  };
  const compile = (layers: (Layer | undefined)[], section: Section, at: number): Step[] => {
    const current = layers[at];
    if (!current) return at > 0 ? compile(layers, section, at - 1) : [];
    const elements = current.sections[section];
    // A file without the section inherits it whole, as if it held only <base />.
    if (!elements) return at > 0 ? compile(layers, section, at - 1) : [];
    const steps: Step[] = [];
    for (const step of compileSection(elements, section, show(current.file), current.scope)) {
      if (step.policy === 'base') {
        if (at === 0)
          throw new ArtifactError(step.file, step.line, 'base', 'the global scope has nothing to inherit');
        steps.push(...compile(layers, section, at - 1));
      } else if (step.policy === 'include-fragment') {
        const fragment = fragments.get(step.fragment);
        if (!fragment)
          throw new ArtifactError(
            step.file,
            step.line,
            'include-fragment',
            `no fragment ${step.fragment} in policy-fragments/`,
          );
        const inner = compileSection(
          fragment.element.children,
          section,
          show(fragment.file),
          `${current.scope}/${step.fragment}`,
        );
        const nested = inner.find((s) => s.policy === 'base' || s.policy === 'include-fragment');
        if (nested)
          throw new ArtifactError(nested.file, nested.line, nested.policy, 'not allowed in a fragment');
        steps.push(...inner);
      } else steps.push(step);
    }
    return steps;
  };
  return {
    /** The policy file of a scope, if there is one (each file is taken once). */
    layer,
    /** The effective policy of layers from global (first) to operation (last); absent layers are all <base />. */
    compose: (layers: (Layer | undefined)[]): Pipeline =>
      Object.fromEntries(
        SECTIONS.map((section) => [section, compile(layers, section, layers.length - 1)]),
      ) as Pipeline,
    /** Policy files no scope took. */
    strays: () => [...policyFiles],
  };
}
