/**
 * @module Reading a YAML configuration file with the line of every key, and reporting what
 * is wrong with it: each refused value named by its source (the file, an environment
 * variable, a flag), its line and its key — one line for all of them. Used by
 * `serve-config.ts` (`axon serve`'s configuration).
 */
import { readFileSync } from 'node:fs';
import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { z } from 'zod';
import { InvalidParamsError } from '../../errors/invalid-params-error.js';

/** One refused value: where it came from (a file, a variable, a flag), its line and key. */
export interface ServeConfigProblem {
  readonly source: string;
  readonly line: number | null;
  readonly key: string;
  readonly message: string;
}

/** A configuration that cannot be served; its message is one line naming each problem. */
export class ServeConfigError extends InvalidParamsError {
  readonly problems: readonly ServeConfigProblem[];

  constructor(problems: readonly ServeConfigProblem[]) {
    super(problems.map(describeProblem).join('; '), { details: { problems } });
    this.problems = problems;
  }
}

/** `axon.yaml line 4: server.port: ...`, `AXON_PORT: ...`, `--port: ...`. */
export function describeProblem(p: ServeConfigProblem): string {
  const where = `${p.source}${p.line === null ? '' : ` line ${p.line}`}`;
  return `${where}: ${p.key === '' || p.key === p.source ? '' : `${p.key}: `}${p.message}`;
}

/** `['auth', 'keys', 0, 'key']` as `auth.keys[0].key`. */
function keyName(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`))
    .join('');
}

/** A parsed YAML file and how to find the line of a key in it. */
export interface YamlSource {
  readonly raw: unknown;
  readonly lineOf: (path: readonly PropertyKey[], key?: string) => number | null;
}

/** `file` parsed (shown in problems as `shown`), or a {@link ServeConfigError}. */
export function readYaml(file: string, shown: string): YamlSource {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : String(err);
    throw new ServeConfigError([{ source: shown, line: null, key: '', message: why }]);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new ServeConfigError(
      doc.errors.map((e) => ({
        source: shown,
        line: lines.linePos(e.pos[0]).line,
        key: '',
        message: e.message.split('\n')[0] ?? 'not YAML',
      })),
    );
  }
  return { raw: doc.toJS() ?? {}, lineOf: lineFinder(doc, lines) };
}

/** The line of the node at `path` (or of its nearest ancestor there is), of `key` in a map. */
function lineFinder(
  doc: Document,
  lines: LineCounter,
): (path: readonly PropertyKey[], key?: string) => number | null {
  return (path, key) => {
    let node: Node | undefined;
    for (let n = path.length; n >= 0 && node === undefined; n--) {
      node = doc.getIn(path.slice(0, n), true) as Node | undefined;
    }
    if (key !== undefined && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && p.key.value === key);
      node = (pair?.key as Node | undefined) ?? node;
    }
    const offset = node?.range?.[0] ?? doc.contents?.range?.[0];
    return offset === undefined ? null : lines.linePos(offset).line;
  };
}

/** Problems of a zod parse, each with its key and line. */
export function zodProblems(
  error: z.ZodError,
  source: string,
  lineOf: YamlSource['lineOf'] | null,
  prefix: readonly PropertyKey[] = [],
): ServeConfigProblem[] {
  return error.issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({
        source,
        line: lineOf?.(path, key) ?? null,
        key: keyName([...path, key]),
        message: `unknown key "${key}"`,
      }));
    }
    return [{ source, line: lineOf?.(path) ?? null, key: keyName(path), message: issue.message }];
  });
}
