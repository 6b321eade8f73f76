import { describe, expect, it } from 'vitest';
import { compileValue } from './expressions.ts';

describe('expressions: tokenizing', () => {
  it('an unexpected character is named, wherever it stands', () => {
    expect(() => compileValue('@(context.Request.Method # "x")')).toThrow('unexpected "#"');
    expect(() => compileValue('@(context.Request.Method + $"x")')).toThrow('unexpected "$"');
  });
});
