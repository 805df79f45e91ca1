/**
 * @module The generated parts of docs/benchmarks.md: each lies between a start and an end
 * marker comment, and is replaced whole, the rest of the doc kept as it is.
 */

/**
 * `doc` with what lies between `start` and `end` replaced by `content` (a blank line either
 * side); `undefined` unless the doc has exactly one `start` followed by exactly one `end`.
 */
export function replaceBetween(
  doc: string,
  start: string,
  end: string,
  content: string,
): string | undefined {
  const count = (part: string): number => doc.split(part).length - 1;
  if (count(start) !== 1 || count(end) !== 1) return undefined;
  const from = doc.indexOf(start) + start.length;
  const to = doc.indexOf(end);
  if (to < from) return undefined;
  return `${doc.slice(0, from)}\n\n${content.trim()}\n\n${doc.slice(to)}`;
}

/** What lies between `start` and `end`, trimmed; `undefined` as for {@link replaceBetween}. */
export function textBetween(doc: string, start: string, end: string): string | undefined {
  if (replaceBetween(doc, start, end, '') === undefined) return undefined;
  return doc.slice(doc.indexOf(start) + start.length, doc.indexOf(end)).trim();
}
