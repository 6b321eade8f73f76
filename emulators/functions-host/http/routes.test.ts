/** Route constraints, checked as ASP.NET Core's constraints parse a route value. */
import { describe, expect, it } from 'vitest';
import { pathSegments } from './request-path.ts';
import { compileRoute, matchRoute } from './routes.ts';

const matches = (template: string, path: string) =>
  matchRoute(compileRoute(template), pathSegments(path)) !== undefined;

describe('{id:guid}: what Guid.TryParse takes', () => {
  const guid = '0f8fad5b-d9cb-469f-a165-70867728950e';
  it('takes the N, D, B and P forms in any case, white space around', () => {
    for (const value of [
      guid,
      guid.replaceAll('-', ''),
      `{${guid}}`,
      `(${guid})`,
      guid.toUpperCase(),
      ` ${guid} `,
    ])
      expect(matches('t/{id:guid}', `/t/${value}`), value).toBe(true);
  });
  it('refuses unbalanced braces, dashes in only some places, and anything else', () => {
    for (const value of [`{${guid}`, `${guid})`, `(${guid}}`, guid.replace('-', ''), `${guid}0`, 'x'])
      expect(matches('t/{id:guid}', `/t/${value}`), value).toBe(false);
  });
});

describe('{flag:bool}: what bool.TryParse takes', () => {
  it('takes true and false in any case, white space around; nothing else', () => {
    for (const value of ['true', 'FALSE', ' True\t'])
      expect(matches('t/{flag:bool}', `/t/${value}`), value).toBe(true);
    for (const value of ['1', 'yes', 'truex'])
      expect(matches('t/{flag:bool}', `/t/${value}`), value).toBe(false);
  });
});

describe('a segment of several parts, matched as ASP.NET matches it: literals from the right', () => {
  const values = (template: string, path: string) => matchRoute(compileRoute(template), pathSegments(path));
  it('gives the last parameter what follows the last literal', () => {
    expect(values('files/{name}.{ext}', '/files/archive.tar.gz')).toEqual({ name: 'archive.tar', ext: 'gz' });
    expect(values('t/{a}-{b}-{c}', '/t/p-q-r-s')).toEqual({ a: 'p-q', b: 'r', c: 's' });
  });
});

describe('an optional parameter after a period ({name}.{ext?})', () => {
  const values = (path: string) => matchRoute(compileRoute('files/{name}.{ext?}'), pathSegments(path));
  it('may be left out with its period, as ASP.NET takes it; a segment ending in the period matches nothing', () => {
    expect(values('/files/readme')).toEqual({ name: 'readme' });
    expect(values('/files/a.b.c')).toEqual({ name: 'a.b', ext: 'c' });
    expect(values('/files/readme.')).toBeUndefined();
  });
});
