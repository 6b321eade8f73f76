import { describe, expect, it } from 'vitest';
import { compileValue, type ExpressionFacts, expressionContext } from './expressions.ts';

/** Evaluates `@(source)` on a request whose answer has `status` (and, given, headers and a LastError). */
function run(source: string, facts: Partial<ExpressionFacts> = {}) {
  const template = compileValue(`@(${source})`);
  return template(() =>
    expressionContext({
      method: 'GET',
      url: new URL('http://127.0.0.1/web/api/tasks'),
      headers: {},
      ipAddress: '127.0.0.1',
      variables: new Map(),
      responseStatus: 200,
      ...facts,
    }),
  );
}

describe('expressions: comparison, logical and conditional operators', () => {
  it("quota-by-key's reference condition: StatusCode >= 200 && StatusCode < 400", () => {
    const condition = 'context.Response.StatusCode >= 200 && context.Response.StatusCode < 400';
    expect(run(condition, { responseStatus: 200 })).toBe('True');
    expect(run(condition, { responseStatus: 399 })).toBe('True');
    expect(run(condition, { responseStatus: 400 })).toBe('False');
    expect(run(condition, { responseStatus: 199 })).toBe('False');
  });

  // [expression, its value]: every operator as C# evaluates it, then C#'s precedence and associativity.
  const cases: [string, string][] = [
    ['1 < 2', 'True'],
    ['2 <= 2', 'True'],
    ['2 > 2', 'False'],
    ['context.Request.Method == "GET"', 'True'],
    ['context.Request.Method != "GET"', 'False'],
    ['!(1 < 2)', 'False'],
    ['false || true', 'True'],
    ['context.Request.Headers.GetValueOrDefault("x-a") == null', 'True'],
    ['context.Response.StatusCode == 200 ? "ok" : "not ok"', 'ok'],
    // A generic argument is still a generic argument, not a comparison.
    ['context.Variables.GetValueOrDefault<string>("v", "d") == "d"', 'True'],
    // ! > + > relational > equality > && > || > ?? > ?: (right to left)
    ['true || false && false', 'True'],
    ['1 < 2 == 2 < 3', 'True'],
    ['!false == true', 'True'],
    ['"x" ?? "a" + "b"', 'x'],
    ['false ? "a" : true ? "b" : "c"', 'b'],
    ['true ? "a" : "b" + "c"', 'a'],
    // + adds numbers, concatenates anything else.
    ['context.Response.StatusCode + 1 == 201', 'True'],
    ['context.Response.StatusCode + "1"', '2001'],
  ];
  it.each(cases)('%s is %s', (source, value) => expect(run(source)).toBe(value));

  it('a value read on the call decides', () => {
    const header = { headers: { 'x-a': 'v' } };
    expect(run('context.Request.Headers.GetValueOrDefault("x-a") == null', header)).toBe('False');
    expect(run('context.Response.StatusCode == 404 ? "missing" : "found"', { responseStatus: 404 })).toBe(
      'missing',
    );
  });

  it('&&, || and ?: evaluate their right side only when needed (a member read on null there does not fail)', () => {
    expect(run('context.LastError == null || context.LastError.Message == "m"')).toBe('True');
    expect(run('context.LastError != null && context.LastError.Message == "m"')).toBe('False');
    expect(run('context.LastError == null ? "none" : context.LastError.Message')).toBe('none');
  });

  // [expression, C#'s compiler error]: types C# does not combine refuse the policy when it is loaded.
  const refused: [string, string][] = [
    [
      'context.Response.StatusCode == "200"',
      "Operator '==' cannot be applied to operands of type 'int' and 'string'",
    ],
    ['"a" < "b"', "Operator '<' cannot be applied to operands of type 'string' and 'string'"],
    ['true && 1', "Operator '&&' cannot be applied to operands of type 'bool' and 'int'"],
    ['!context.Request.Method', "Operator '!' cannot be applied to operand of type 'string'"],
    ['context.Request.Method ? "a" : "b"', "Cannot implicitly convert type 'string' to 'bool'"],
    [
      'true ? 1 : "b"',
      "Type of conditional expression cannot be determined because there is no implicit conversion between 'int' and 'string'",
    ],
  ];
  it.each(refused)('%s is refused at load: %s', (source, error) =>
    expect(() => compileValue(`@(${source})`)).toThrow(error));

  it('a type only known on the call (a header read without default is null in the dry run) fails the evaluation', () => {
    const template = 'context.Request.Headers.GetValueOrDefault("x-a") == 5';
    expect(run(template)).toBe('False');
    expect(() => run(template, { headers: { 'x-a': '5' } })).toThrow(
      "Operator '==' cannot be applied to operands of type 'string' and 'int'",
    );
  });
});

describe('expressions: tokenizing', () => {
  it('an unexpected character is named, wherever it stands', () => {
    expect(() => compileValue('@(context.Request.Method # "x")')).toThrow('unexpected "#"');
    expect(() => compileValue('@(context.Request.Method + $"x")')).toThrow('unexpected "$"');
  });
});
