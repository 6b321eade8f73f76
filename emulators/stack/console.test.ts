import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Console, printable } from './console.ts';

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
});
