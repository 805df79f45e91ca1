import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DOC_PATH,
  END_MARKER,
  endpointRows,
  endpointTable,
  runHttpApiDocs,
  START_MARKER,
} from '../../scripts/http-api-docs.js';
import { openApiDocument } from '../../src/server/openapi.js';

function run(docPath: string, check: boolean): { code: number; stdout: string; stderr: string } {
  const out: string[] = [];
  const err: string[] = [];
  const code = runHttpApiDocs(
    { docPath, check },
    {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
    },
  );
  return { code, stdout: out.join(''), stderr: err.join('') };
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), `axon-http-api-docs-${randomUUID().slice(0, 8)}-`));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/http-api.md: the table of endpoints', () => {
  it('is the OpenAPI document’s, as `npm run docs:http-api` writes it (run it when this fails)', () => {
    const { code, stderr } = run(DOC_PATH, true);
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('has a row for every operation of the document', () => {
    const doc = readFileSync(DOC_PATH, 'utf8');
    const paths = openApiDocument('0.0.0')['paths'] as Record<string, Record<string, unknown>>;
    let operations = 0;
    for (const [path, item] of Object.entries(paths)) {
      for (const method of Object.keys(item)) {
        operations += 1;
        expect(doc, `${method} ${path}`).toContain(`| \`${method.toUpperCase()}\` `);
        expect(doc, `${method} ${path}`).toContain(`\`${path}\``);
      }
    }
    expect(endpointRows(openApiDocument('0.0.0'))).toHaveLength(operations);
    expect(operations).toBeGreaterThan(15);
  });
});

describe('npm run docs:http-api', () => {
  const stale = `# API\n\n${START_MARKER}\n\n| method | path |\n| --- | --- |\n| \`GET\` | \`/gone\` |\n\n${END_MARKER}\n\nAfter.\n`;

  it('--check exits 1 on a stale table and changes nothing', () => {
    const path = join(dir, 'http-api.md');
    writeFileSync(path, stale);
    const { code, stderr } = run(path, true);
    expect(code).toBe(1);
    expect(stderr).toContain('npm run docs:http-api');
    expect(readFileSync(path, 'utf8')).toBe(stale);
  });

  it('writes the table between the markers, keeps the rest, and is then up to date', () => {
    const path = join(dir, 'http-api.md');
    writeFileSync(path, stale);
    expect(run(path, false).code).toBe(0);
    const written = readFileSync(path, 'utf8');
    expect(written).toBe(
      `# API\n\n${START_MARKER}\n\n${endpointTable(openApiDocument('0.0.0'))}\n\n${END_MARKER}\n\nAfter.\n`,
    );
    expect(written).not.toContain('/gone');
    expect(run(path, true).code).toBe(0);
  });

  it('refuses a doc without exactly one pair of markers, writing nothing', () => {
    const path = join(dir, 'http-api.md');
    writeFileSync(path, `# API\n\n${START_MARKER}\n`);
    const { code, stderr } = run(path, false);
    expect(code).toBe(1);
    expect(stderr).toContain(END_MARKER);
    expect(readFileSync(path, 'utf8')).toBe(`# API\n\n${START_MARKER}\n`);
  });
});
