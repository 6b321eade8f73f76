import { printable } from '../core/files.ts';

/** docker-compose-like output: each component's lines prefixed with its name in its own colour. */
const COLOURS = [36, 33, 32, 35, 34, 96, 93, 92, 95, 94];

/**
 * Whether to colour: on a terminal, unless NO_COLOR (non-empty, no-color.org) or TERM=dumb says not to;
 * FORCE_COLOR decides over both and over a pipe, as in Node (`0` or `false`: never).
 */
function colours(out: NodeJS.WritableStream | null): boolean {
  const { FORCE_COLOR: force, NO_COLOR: none, TERM: term } = process.env;
  if (force !== undefined) return force !== '0' && force !== 'false';
  if (none || term === 'dumb') return false;
  return Boolean((out as NodeJS.WriteStream | null)?.isTTY);
}

export class Console {
  readonly #colour = new Map<string, number>();
  readonly #width: number;
  readonly #tty: boolean;

  constructor(
    names: string[],
    /** null: silent (a default parameter would turn `undefined` back into stdout). */
    private readonly out: NodeJS.WritableStream | null,
  ) {
    this.#width = Math.max(...names.map((name) => name.length), 5);
    for (const [i, name] of names.entries()) this.#colour.set(name, COLOURS[i % COLOURS.length] as number);
    this.#tty = colours(out);
  }

  #paint(code: number, text: string) {
    return this.#tty ? `\x1b[${code}m${text}\x1b[0m` : text;
  }

  #prefix(name: string) {
    return this.#paint(this.#colour.get(name) ?? 37, `${name.padEnd(this.#width)} |`);
  }

  line(name: string, text: string) {
    this.out?.write(`${this.#prefix(name)} ${printable(text)}\n`);
  }

  problem(name: string, text: string) {
    this.out?.write(`${this.#prefix(name)} ${this.#paint(31, printable(text))}\n`);
  }

  /** One progress line per component while the stack starts. */
  progress(name: string, state: 'starting' | 'ready' | 'failed', detail = '') {
    const mark = {
      starting: this.#paint(90, '…'),
      ready: this.#paint(32, '✔'),
      failed: this.#paint(31, '✘'),
    }[state];
    this.out?.write(`${mark} ${name.padEnd(this.#width)} ${state}${detail ? ` ${detail}` : ''}\n`);
  }

  raw(text: string) {
    this.out?.write(text);
  }
}
