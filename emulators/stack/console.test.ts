import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { printable } from '../core/files.ts';
import { Console } from './console.ts';

describe('console output', () => {
  it('writes control characters from components as \\xHH, so a task title cannot drive the terminal or forge a line', () => {
    expect(printable('Title\x1b[2J\rstack | ready\x07\x9b\x7f')).toBe(
      'Title\\x1B[2J\\x0Dstack | ready\\x07\\x9B\\x7F',
    );
    expect(printable('tab\tand ünïcode ✔ stay')).toBe('tab\tand ünïcode ✔ stay');

    const out = new PassThrough();
    const console = new Console(['functions'], out);
    console.line('functions', 'Executed [\x1b[31mevil\nfake line]');
    console.problem('functions', 'crashed: \r\x1b[2K');
    expect(out.read().toString()).toBe(
      'functions | Executed [\\x1B[31mevil\\x0Afake line]\nfunctions | crashed: \\x0D\\x1B[2K\n',
    );
  });

  describe('colour', () => {
    const saved = {
      NO_COLOR: process.env.NO_COLOR,
      FORCE_COLOR: process.env.FORCE_COLOR,
      TERM: process.env.TERM,
    };
    afterEach(() => {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });
    /** What a Console writes for one line, to a terminal (isTTY) or a pipe, under `env`. */
    const written = (tty: boolean, env: Record<string, string | undefined>) => {
      for (const [name, value] of Object.entries({
        NO_COLOR: undefined,
        FORCE_COLOR: undefined,
        TERM: 'xterm',
        ...env,
      })) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      const out = Object.assign(new PassThrough(), { isTTY: tty });
      new Console(['blob'], out).line('blob', 'up');
      return out.read().toString();
    };
    const plain = 'blob  | up\n';
    const painted = '\x1b[36mblob  |\x1b[0m up\n';

    it('a terminal gets colour; a pipe or file none, unless FORCE_COLOR says so', () => {
      expect(written(true, {})).toBe(painted);
      expect(written(false, {})).toBe(plain);
      expect(written(false, { FORCE_COLOR: '1' })).toBe(painted);
    });

    it('NO_COLOR, TERM=dumb and FORCE_COLOR=0 turn it off, even on a terminal (no-color.org)', () => {
      expect(written(true, { NO_COLOR: '1' })).toBe(plain);
      expect(written(true, { TERM: 'dumb' })).toBe(plain);
      expect(written(true, { FORCE_COLOR: '0' })).toBe(plain);
      expect(written(false, { FORCE_COLOR: '0' })).toBe(plain);
      // An empty NO_COLOR is unset (no-color.org); FORCE_COLOR wins over it, as in Node.
      expect(written(true, { NO_COLOR: '' })).toBe(painted);
      expect(written(true, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(painted);
    });
  });
});
