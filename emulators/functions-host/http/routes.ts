/**
 * ASP.NET Core route templates, as the host routes HTTP functions: literal and parameter segments
 * matched case-insensitively, `{name?}`, `{name=default}`, `{*catchAll}`, inline constraints
 * (`{id:int}`, `{name:alpha:minlength(2)}`, `{x:regex(^a+$)}` …). The host tries them in the order of
 * its functions' names, with no precedence between templates (see http/functions.ts).
 */
import type { PathSegments } from './request-path.ts';

interface Param {
  name: string;
  optional: boolean;
  catchAll: boolean;
  defaultValue?: string;
  constraints: ((value: string) => boolean)[];
}

type Part = { literal: string } | { param: Param };
interface Segment {
  parts: Part[];
  /** For segments mixing literals and parameters (`{name}.json`). */
  pattern?: RegExp;
  /** `{name}.{ext?}`: the pattern without its period and optional parameter, tried if the whole fails. */
  withoutOptional?: RegExp;
}

export interface CompiledRoute {
  template: string;
  segments: Segment[];
}

export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
export const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n };
/** An integer as .NET parses one with NumberStyles.Integer (white space around, a sign), within its range. */
export function parseNetInteger(value: string, { min, max } = INT64): bigint | undefined {
  if (!/^[\t\n\v\f\r ]*[+-]?\d+[\t\n\v\f\r ]*$/.test(value)) return undefined;
  const number = BigInt(value);
  return number >= min && number <= max ? number : undefined;
}
/** What the constraints parse with. */
const integer = (min: bigint, max: bigint) => (value: string) =>
  parseNetInteger(value, { min, max }) !== undefined;
/** A decimal number; .NET's parsers take no `0x`, `0b` or `0o` forms, which Number() does. */
const number = (value: string) =>
  value.trim() !== '' && !/^\s*[+-]?0[xbo]/i.test(value) && Number.isFinite(Number(value));

const GUID_D = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Guid.TryParse's N, D, B and P forms (it trims white space first); not its `{0x…,…}` X form. */
const GUID = new RegExp(`^(?:[0-9a-f]{32}|${GUID_D}|\\{${GUID_D}\\}|\\(${GUID_D}\\))$`, 'i');

function constraint(spec: string, template: string): (value: string) => boolean {
  const [, name = '', args] = /^(\w+)(?:\((.*)\))?$/s.exec(spec) ?? [];
  const nums = (args ?? '').split(',').map(Number);
  const [a = Number.NaN, b = Number.NaN] = nums;
  switch (name.toLowerCase()) {
    case 'int':
      return integer(-(2n ** 31n), 2n ** 31n - 1n);
    case 'long':
      return integer(INT64.min, INT64.max);
    case 'bool':
      // bool.TryParse trims white space first.
      return (value) => /^(true|false)$/i.test(value.trim());
    case 'alpha':
      return (value) => /^[a-z]+$/i.test(value);
    case 'guid':
      return (value) => GUID.test(value.trim());
    case 'datetime':
      return (value) => !Number.isNaN(Date.parse(value));
    case 'decimal':
    case 'double':
    case 'float':
      return number;
    case 'required':
      return (value) => value !== '';
    case 'minlength':
      return (value) => value.length >= a;
    case 'maxlength':
      return (value) => value.length <= a;
    case 'length':
      return nums.length === 2
        ? (value) => value.length >= a && value.length <= b
        : (value) => value.length === a;
    case 'min':
      return (value) => integer(INT64.min, INT64.max)(value) && Number(value) >= a;
    case 'max':
      return (value) => integer(INT64.min, INT64.max)(value) && Number(value) <= a;
    case 'range':
      return (value) => integer(INT64.min, INT64.max)(value) && Number(value) >= a && Number(value) <= b;
    case 'regex': {
      const regex = new RegExp(args ?? '', 'i');
      return (value) => regex.test(value);
    }
    default:
      throw new Error(`route "${template}": unknown constraint "${spec}"`);
  }
}

function parseParam(body: string, template: string): Param {
  const match = /^(\*{1,2})?([A-Za-z_][\w]*)((?::(?:\w+(?:\((?:[^()]|\([^()]*\))*\))?))*)(\?|=(.*))?$/s.exec(
    body,
  );
  if (!match) throw new Error(`route "${template}": invalid parameter "{${body}}"`);
  const [, star, name = '', constraintText = '', suffix, defaultValue] = match;
  const specs = constraintText.match(/:\w+(?:\((?:[^()]|\([^()]*\))*\))?/g) ?? [];
  return {
    name,
    catchAll: star !== undefined,
    optional: suffix === '?' || defaultValue !== undefined || star !== undefined,
    defaultValue,
    constraints: specs.map((spec) => constraint(spec.slice(1), template)),
  };
}

function parseSegment(text: string, template: string): Segment {
  const parts: Part[] = [];
  const regex = /\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}|([^{}]+)/g;
  for (const match of text.matchAll(regex)) {
    if (match[2] !== undefined) parts.push({ literal: match[2] });
    else parts.push({ param: parseParam(match[1] ?? '', template) });
  }
  if (parts.length <= 1) return { parts };
  const [last, before] = [parts.at(-1), parts.at(-2)];
  // ASP.NET's separator: a period before an optional parameter that ends the segment.
  const separated =
    last && 'param' in last && last.param.optional && before && 'literal' in before && before.literal === '.';
  return {
    parts,
    pattern: partsPattern(parts),
    withoutOptional: separated ? partsPattern(parts.slice(0, -2)) : undefined,
  };
}

/** ASP.NET finds each literal from the right (its last occurrence): greedy captures do the same. */
function partsPattern(parts: Part[]): RegExp {
  const source = parts.map((part) => ('literal' in part ? escapeRegExp(part.literal) : '(.+)')).join('');
  return new RegExp(`^${source}$`, 'i');
}

export function compileRoute(template: string): CompiledRoute {
  const texts = template.split('/').filter((segment) => segment !== '');
  return { template, segments: texts.map((text) => parseSegment(text, template)) };
}

/** .NET's OrdinalIgnoreCase comparison: code units of the upper-cased texts. */
export const ordinalIgnoreCase = (a: string, b: string) => {
  const [x, y] = [a.toUpperCase(), b.toUpperCase()];
  return x < y ? -1 : x > y ? 1 : 0;
};

const accepts = (param: Param, value: string) => param.constraints.every((check) => check(value));

/**
 * Route values if the path matches, else undefined. As ASP.NET's RoutePatternMatcher: an empty segment
 * (`a//b`) matches nothing, but a catch-all takes the rest of the path as it is, slashes included.
 */
export function matchRoute(
  route: CompiledRoute,
  { segments: path, trailingSlash }: PathSegments,
): Record<string, string> | undefined {
  const values: Record<string, string> = {};
  for (const [i, segment] of route.segments.entries()) {
    const [only] = segment.parts;
    const single = segment.parts.length === 1 && only && 'param' in only ? only.param : undefined;
    if (path[i] === '') return undefined;
    if (single?.catchAll) {
      const rest = i < path.length ? path.slice(i).join('/') + (trailingSlash ? '/' : '') : '';
      if (rest && !accepts(single, rest)) return undefined;
      if (rest || single.defaultValue !== undefined)
        values[single.name] = rest || (single.defaultValue ?? '');
      return values;
    }
    const value = path[i];
    if (value === undefined) {
      if (!single?.optional) return undefined;
      if (single.defaultValue !== undefined) values[single.name] = single.defaultValue;
      continue;
    }
    if (single) {
      if (!accepts(single, value)) return undefined;
      values[single.name] = value;
    } else if (segment.pattern) {
      let match = segment.pattern.exec(value);
      if (!match && segment.withoutOptional && !value.endsWith('.'))
        match = segment.withoutOptional.exec(value);
      if (!match) return undefined;
      const params = segment.parts.flatMap((part) => ('param' in part ? [part.param] : []));
      for (const [j, param] of params.entries()) {
        const captured = match[j + 1];
        // The optional parameter left out with its period.
        if (captured === undefined) continue;
        if (!accepts(param, captured)) return undefined;
        values[param.name] = captured;
      }
    } else if (only && 'literal' in only && only.literal.toLowerCase() !== value.toLowerCase()) {
      return undefined;
    }
  }
  return path.length > route.segments.length ? undefined : values;
}
