/**
 * Task bodies of the function API. Only the spec's fields are kept (extra fields are dropped, never
 * stored); each must be a string or null when present. A wrongly typed field is refused rather than
 * coerced, so what is stored is always what the client meant.
 */
const FIELDS = ['Title', 'Description', 'DueDate'] as const;
type Field = (typeof FIELDS)[number];

/** A task as stored and returned: absent optional fields are null, as the original's model serializes them. */
export interface TaskFields {
  Title: string;
  Description: string | null;
  DueDate: string | null;
}

export type ParsedTask =
  | { kind: 'task'; fields: Partial<Record<Field, string>> }
  /** Empty, unparsable, or JSON that is not an object. */
  | { kind: 'notObject' }
  | { kind: 'wrongType'; field: Field };

function parseObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    // A leading byte order mark is skipped, as .NET's StreamReader skips it in the original.
    const value = JSON.parse(body.toString('utf8').replace(/^\uFEFF/, '')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads the known fields; `caseInsensitive` for the create-only variant, which binds `title` or
 * `TITLE` like `Title`. The last such key in the body wins, as .NET's JSON binders set the property at
 * each one (JSON.parse keeps a key repeated exactly at its first place, with its last value).
 */
export function parseTask(body: Buffer, caseInsensitive: boolean): ParsedTask {
  const object = parseObject(body);
  if (!object) return { kind: 'notObject' };
  const fields: Partial<Record<Field, string>> = {};
  for (const field of FIELDS) {
    const key = caseInsensitive
      ? Object.keys(object)
          .reverse()
          .find((k) => k.toLowerCase() === field.toLowerCase())
      : Object.hasOwn(object, field)
        ? field
        : undefined;
    const value = key === undefined ? undefined : object[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') return { kind: 'wrongType', field };
    fields[field] = value;
  }
  return { kind: 'task', fields };
}

export function taskFields(fields: Partial<Record<Field, string>>, title: string): TaskFields {
  return { Title: title, Description: fields.Description ?? null, DueDate: fields.DueDate ?? null };
}
