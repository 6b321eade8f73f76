/**
 * A request value as ASP.NET's query and form collections give it to the original: names compare
 * without case (`TaskId` is `taskId`), and several values of one name are one string joined by commas
 * (StringValues), so `?taskId=a&taskId=b` asks for `a,b`.
 */
export function collectionValue(entries: Iterable<[string, string]>, name: string): string | null {
  const wanted = name.toLowerCase();
  const values = [...entries].flatMap(([key, value]) => (key.toLowerCase() === wanted ? [value] : []));
  return values.length ? values.join(',') : null;
}
