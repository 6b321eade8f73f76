/**
 * The query string on its way to the backend. Each parameter is kept as the caller wrote it, so whatever
 * no policy touches reaches the backend byte for byte (URLSearchParams would turn `%20` into `+` and a
 * bare `c` into `c=`); only parameters a policy writes are encoded anew.
 */
interface Part {
  /** The `&`-separated piece as written. */
  raw: string;
  /** Its decoded name and value; none for an empty piece (`a=1&&b=2`). */
  entry?: [string, string];
}

const part = (raw: string): Part => {
  // The leading `&` keeps URLSearchParams from taking a `?` that starts the piece as a delimiter.
  const [entry] = new URLSearchParams(`&${raw}`);
  return { raw, entry };
};

const encoded = (name: string, value: string) =>
  part(`${encodeURIComponent(name)}=${encodeURIComponent(value)}`);

export class Query {
  private parts: Part[];

  /** `raw`: the query as written, without its `?`. */
  constructor(raw: string) {
    this.parts = raw === '' ? [] : raw.split('&').map(part);
  }

  /** The query of a request target (`/path?query`) as the caller sent it. */
  static ofTarget(target: string): Query {
    const start = target.indexOf('?');
    return new Query(start < 0 ? '' : (target.slice(start + 1).split('#')[0] as string));
  }

  has(name: string): boolean {
    return this.parts.some((p) => p.entry?.[0] === name);
  }

  /** The first value of `name`, decoded. */
  get(name: string): string | null {
    return this.parts.find((p) => p.entry?.[0] === name)?.entry?.[1] ?? null;
  }

  delete(name: string): void {
    this.parts = this.parts.filter((p) => p.entry?.[0] !== name);
  }

  append(name: string, value: string): void {
    this.parts.push(encoded(name, value));
  }

  /** `name` with exactly these values, where its first occurrence was (else at the end). */
  set(name: string, values: string[]): void {
    const at = this.parts.findIndex((p) => p.entry?.[0] === name);
    const fresh = values.map((value) => encoded(name, value));
    if (at < 0) this.parts.push(...fresh);
    else
      this.parts = [
        ...this.parts.slice(0, at),
        ...fresh,
        ...this.parts.slice(at + 1).filter((p) => p.entry?.[0] !== name),
      ];
  }

  /** Appends `other`'s parameters as written, but for those named in `except`. */
  appendFrom(other: Query, except: Set<string>): void {
    for (const p of other.parts) if (p.entry && !except.has(p.entry[0])) this.parts.push(p);
  }

  toString(): string {
    return this.parts.map((p) => p.raw).join('&');
  }
}
