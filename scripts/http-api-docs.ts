/**
 * @module `npm run docs:http-api`: writes the table of endpoints of the server's OpenAPI
 * document (`src/server/openapi.ts`, what `GET /openapi.json` serves) into docs/http-api.md,
 * between its two marker comments, so the table is generated, never typed. `--check` changes
 * nothing and exits 1 when the doc's table is not the document's (test/scripts runs it too).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openApiDocument } from '../src/server/openapi.js';

/** Where the generated table starts. */
export const START_MARKER = '<!-- http-api:endpoints:start -->';
/** Where it ends. */
export const END_MARKER = '<!-- http-api:endpoints:end -->';

const root = resolve(import.meta.dirname, '..');
/** The doc the table goes into. */
export const DOC_PATH = join(root, 'docs', 'http-api.md');

/** Where to write output and errors (the process's streams, or a test's capture). */
export interface HttpApiDocsIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

type Json = Record<string, unknown>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The schema name a `{ $ref: '#/components/schemas/X' }` (or an array of them) points at. */
function schemaName(content: unknown): string | null {
  const media = (content as Json | undefined)?.['application/json'] as Json | undefined;
  const schema = media?.['schema'] as Json | undefined;
  if (!schema) return null;
  const ref = (schema['$ref'] ?? (schema['items'] as Json | undefined)?.['$ref']) as
    string | undefined;
  if (ref === undefined) return null;
  const name = ref.slice(ref.lastIndexOf('/') + 1);
  return schema['type'] === 'array' ? `[${name}]` : name;
}

const cell = (text: string): string => text.replaceAll('|', '\\|');
const code = (text: string): string => `\`${text}\``;

/** The rows of the table: one per operation, in the document's order. */
export function endpointRows(document: Json): string[][] {
  const rows: string[][] = [];
  for (const [path, item] of Object.entries(document['paths'] as Record<string, Json>)) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const body = op['requestBody'] as Json | undefined;
      const responses = Object.entries(op['responses'] as Record<string, Json>)
        .filter(([status]) => status !== 'default')
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([status, r]) => {
          const name = schemaName(r['content']);
          return name === null ? status : `${status} ${name}`;
        });
      rows.push([
        code(method.toUpperCase()),
        code(path),
        cell(typeof op['summary'] === 'string' ? op['summary'] : ''),
        body ? (schemaName(body['content']) ?? 'JSON') : '',
        responses.length > 0 ? responses.join(', ') : 'errors only',
      ]);
    }
  }
  return rows;
}

/** The table of `document`'s endpoints, its columns padded as Prettier pads them. */
export function endpointTable(document: Json): string {
  const header = ['method', 'path', 'what it does', 'body', 'success'];
  const rows = [header, ...endpointRows(document)];
  const widths = header.map((_, i) => Math.max(3, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [
    line(header),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

/**
 * `doc` with what lies between its markers replaced by `table`; `undefined` unless it has
 * exactly one start marker followed by exactly one end marker.
 */
export function withEndpointTable(doc: string, table: string): string | undefined {
  const starts = doc.split(START_MARKER).length - 1;
  const ends = doc.split(END_MARKER).length - 1;
  if (starts !== 1 || ends !== 1) return undefined;
  const start = doc.indexOf(START_MARKER) + START_MARKER.length;
  const end = doc.indexOf(END_MARKER);
  if (end < start) return undefined;
  return `${doc.slice(0, start)}\n\n${table}\n\n${doc.slice(end)}`;
}

/** Writes (or with `check`, only compares) the table into the doc; returns the exit code. */
export function runHttpApiDocs(
  options: { readonly docPath: string; readonly check: boolean },
  io: HttpApiDocsIo,
): number {
  const shown = relative(process.cwd(), options.docPath) || options.docPath;
  let doc: string;
  try {
    doc = readFileSync(options.docPath, 'utf8');
  } catch {
    io.stderr.write(`docs:http-api: cannot read ${shown}\n`);
    return 1;
  }
  const updated = withEndpointTable(doc, endpointTable(openApiDocument('0.0.0')));
  if (updated === undefined) {
    io.stderr.write(
      `docs:http-api: ${shown} needs exactly one ${START_MARKER} followed by one ${END_MARKER}; nothing written\n`,
    );
    return 1;
  }
  if (updated === doc) {
    io.stdout.write(`${shown} lists the OpenAPI document's endpoints\n`);
    return 0;
  }
  if (options.check) {
    io.stderr.write(
      `docs:http-api: the endpoints in ${shown} are not the OpenAPI document's; run \`npm run docs:http-api\`\n`,
    );
    return 1;
  }
  writeFileSync(options.docPath, updated);
  io.stdout.write(`wrote the OpenAPI document's endpoints into ${shown}\n`);
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === import.meta.filename) {
  const { values } = parseArgs({
    options: { doc: { type: 'string' }, check: { type: 'boolean' } },
  });
  process.exitCode = runHttpApiDocs(
    { docPath: resolve(values.doc ?? DOC_PATH), check: values.check ?? false },
    process,
  );
}
