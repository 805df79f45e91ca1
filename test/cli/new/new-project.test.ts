/**
 * `axon new <name>` and `axon generate <kind> <name>` (issue 48): the project and the items
 * they write, the axon.yaml that names them (read as axon serve reads it), and every refusal
 * — one line, exit 2, nothing written.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadServeConfig } from '../../../src/cli/serve/serve-config.js';
import { axonIn } from './cli-in.js';

const repoPackage = JSON.parse(
  readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'),
) as {
  version: string;
  engines: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  allowScripts: Record<string, boolean>;
};

/** Every file under `dir`, relative, sorted. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true })
    .flatMap((e) =>
      e.isDirectory() ? filesUnder(dir, join(prefix, e.name)) : [join(prefix, e.name)],
    )
    .sort();
}

let cwd: string;
beforeEach(() => {
  cwd = mkdtempSync(join(tmpdir(), 'axon-new-'));
});
afterEach(() => {
  rmSync(cwd, { recursive: true, force: true });
});

const PROJECT_FILES = [
  '.gitignore',
  'README.md',
  'axon.yaml',
  'package.json',
  'src/agents/assistant.ts',
  'src/agents/researcher.ts',
  'src/tools/search-notes.ts',
  'test/agents/assistant.test.ts',
  'tsconfig.build.json',
  'tsconfig.json',
];

describe('axon new', () => {
  it('writes the project into a folder of its name and says what to run next', async () => {
    const { code, stdout, stderr } = await axonIn(cwd, ['new', 'my-service']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const dir = join(cwd, 'my-service');
    expect(filesUnder(dir)).toEqual(PROJECT_FILES);
    for (const file of PROJECT_FILES) expect(stdout).toContain(`  ${file}\n`);
    expect(stdout).toMatch(/^created my-service\/$/m);
    expect(stdout).toContain('  cd my-service\n  npm install && npm start');
  });

  it("pins axon at this version and zod, TypeScript, vitest and @types/node as axon's package.json does", async () => {
    await axonIn(cwd, ['new', 'my-service']);
    const pkg = JSON.parse(readFileSync(join(cwd, 'my-service/package.json'), 'utf8')) as Record<
      string,
      Record<string, string>
    >;
    expect(pkg['name']).toBe('my-service');
    expect(pkg['type']).toBe('module');
    expect(pkg['dependencies']).toEqual({
      axon: `^${repoPackage.version}`,
      zod: repoPackage.dependencies['zod'],
    });
    expect(pkg['devDependencies']).toEqual({
      '@types/node': repoPackage.devDependencies['@types/node'],
      typescript: repoPackage.devDependencies['typescript'],
      vitest: repoPackage.devDependencies['vitest'],
    });
    expect(pkg['engines']).toEqual({ node: repoPackage.engines['node'] });
    // better-sqlite3's install script builds the binding axon serve's SQLite store needs.
    expect(pkg['allowScripts']).toEqual(repoPackage.allowScripts);
    expect(repoPackage.allowScripts['better-sqlite3']).toBe(true);
    expect(pkg['scripts']).toMatchObject({
      test: 'vitest run',
      prestart: 'npm run build',
      start: 'axon serve',
    });
  });

  it('writes an axon.yaml axon serve reads: its agents and tool under code:, built into dist/', async () => {
    await axonIn(cwd, ['new', 'my-service']);
    const dir = join(cwd, 'my-service');
    const config = loadServeConfig({ cwd: dir, env: {} });
    expect(config.port).toBe(7070);
    expect(config.dataDir).toBe(join(dir, '.axon'));
    expect(config.code.map((c) => [c.kind, c.module, c.export])).toEqual([
      ['agents', join(dir, 'dist/agents/assistant.js'), 'assistant'],
      ['agents', join(dir, 'dist/agents/researcher.js'), 'researcher'],
      ['tools', join(dir, 'dist/tools/search-notes.js'), 'searchNotes'],
    ]);
  });

  it('the agent imports axon by its package name, calls the tool and delegates', async () => {
    await axonIn(cwd, ['new', 'my-service']);
    const agent = readFileSync(join(cwd, 'my-service/src/agents/assistant.ts'), 'utf8');
    expect(agent).toContain("from 'axon'");
    expect(agent).toContain("runtime.callTool<Note[]>('search_notes'");
    expect(agent).toContain("runtime.delegate<string>(\n      'researcher'");
    const readme = readFileSync(join(cwd, 'my-service/README.md'), 'utf8');
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test');
  });

  it('makes a scoped package in the folder of its name without the scope', async () => {
    const { code } = await axonIn(cwd, ['new', '@acme/desk']);
    expect(code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(cwd, 'desk/package.json'), 'utf8')) as {
      name: string;
    };
    expect(pkg.name).toBe('@acme/desk');
  });

  it('writes into an empty folder of that name', async () => {
    mkdirSync(join(cwd, 'my-service'));
    expect((await axonIn(cwd, ['new', 'my-service'])).code).toBe(0);
    expect(filesUnder(join(cwd, 'my-service'))).toEqual(PROJECT_FILES);
  });

  it('refuses a folder that is not empty: exit 2, one line, nothing written', async () => {
    mkdirSync(join(cwd, 'my-service'));
    writeFileSync(join(cwd, 'my-service/notes.txt'), 'mine');
    expect(await axonIn(cwd, ['new', 'my-service'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon new: my-service exists and is not empty: nothing was written\n',
    });
    expect(filesUnder(join(cwd, 'my-service'))).toEqual(['notes.txt']);
  });

  it('refuses a name a file has', async () => {
    writeFileSync(join(cwd, 'my-service'), 'a file');
    const { code, stderr } = await axonIn(cwd, ['new', 'my-service']);
    expect(code).toBe(2);
    expect(stderr).toBe('axon new: my-service exists and is not a folder: nothing was written\n');
  });

  it.each([
    ['My-Service', 'has capital letters'],
    ['.hidden', 'starts with "." or "_"'],
    ['_private', 'starts with "." or "_"'],
    ['my service', 'not URL-safe'],
    ['wow!', "has one of ~'!()*"],
    ['a/b', 'has a "/" without a scope'],
    ['http', 'a Node.js built-in module'],
    ['node_modules', 'a name npm reserves'],
    ['axon', 'the package the project depends on'],
    ['x'.repeat(215), 'longer than 214 characters'],
  ])('refuses the name %j (npm would): exit 2, nothing written', async (name, why) => {
    const { code, stdout, stderr } = await axonIn(cwd, ['new', name]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toContain(`axon new: "${name}" cannot be a package's name: it `);
    expect(stderr).toContain(why);
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('needs a name', async () => {
    const { code, stderr } = await axonIn(cwd, ['new']);
    expect(code).toBe(2);
    expect(stderr).toContain("missing required argument 'name'");
  });
});

describe('axon generate', () => {
  let project: string;
  beforeEach(async () => {
    await axonIn(cwd, ['new', 'my-service']);
    project = join(cwd, 'my-service');
  });

  it.each([
    [
      'agent',
      'order-status',
      'agents',
      'order-status',
      'src/agents/order-status.ts',
      'test/agents/order-status.test.ts',
    ],
    [
      'tool',
      'order-status',
      'tools',
      'order_status',
      'src/tools/order-status.ts',
      'test/tools/order-status.test.ts',
    ],
    [
      'workflow',
      'order-status',
      'workflows',
      'order-status',
      'src/workflows/order-status.ts',
      'test/workflows/order-status.test.ts',
    ],
  ])(
    '%s %s: writes its module and test, and names its build under code:',
    async (kind, name, folder, registered, source, test) => {
      const { code, stdout, stderr } = await axonIn(project, ['generate', kind, name]);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toContain(`created ${source}\ncreated ${test}\n`);
      expect(stdout).toContain(`the ${kind} "${registered}" is served from the next npm start`);
      const module = readFileSync(join(project, source), 'utf8');
      expect(module).toContain("from 'axon'");
      expect(module).toContain(`export const orderStatus = define`);
      expect(module).toContain(`name: '${registered}'`);
      expect(readFileSync(join(project, test), 'utf8')).toContain(
        `'../../src/${folder}/${name}.js'`,
      );
      const config = loadServeConfig({ cwd: project, env: {} });
      expect(config.code.filter((c) => c.kind === folder).at(-1)).toMatchObject({
        kind: folder,
        module: join(project, `dist/${folder}/${name}.js`),
        export: 'orderStatus',
      });
    },
  );

  it("keeps axon.yaml's comments and entries, and finds the project from a folder inside it", async () => {
    const before = readFileSync(join(project, 'axon.yaml'), 'utf8');
    expect((await axonIn(join(project, 'src'), ['generate', 'workflow', 'review'])).code).toBe(0);
    const after = readFileSync(join(project, 'axon.yaml'), 'utf8');
    expect(after.startsWith(before.trimEnd())).toBe(true);
    expect(after.slice(before.trimEnd().length)).toBe(
      '\n  workflows:\n    - { module: ./dist/workflows/review.js, export: review }\n',
    );
    expect(existsSync(join(project, 'src/workflows/review.ts'))).toBe(true);
  });

  it('refuses a name the project has: exit 2, nothing written', async () => {
    const yaml = readFileSync(join(project, 'axon.yaml'), 'utf8');
    expect(await axonIn(project, ['generate', 'agent', 'researcher'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'axon generate: src/agents/researcher.ts exists: nothing was written\n',
    });
    // Its files gone, the entry still there: still refused.
    await axonIn(project, ['generate', 'tool', 'lookup']);
    unlinkSync(join(project, 'src/tools/lookup.ts'));
    unlinkSync(join(project, 'test/tools/lookup.test.ts'));
    const named = readFileSync(join(project, 'axon.yaml'), 'utf8');
    const { code, stderr } = await axonIn(project, ['generate', 'tool', 'lookup']);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'axon generate: axon.yaml already names ./dist/tools/lookup.js under code.tools: nothing was written\n',
    );
    expect(readFileSync(join(project, 'axon.yaml'), 'utf8')).toBe(named);
    expect(existsSync(join(project, 'src/tools/lookup.ts'))).toBe(false);
    expect(yaml).not.toBe(named);
  });

  it('refuses a kind it does not make', async () => {
    expect(await axonIn(project, ['generate', 'widget', 'gizmo'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'axon generate: unknown kind "widget": it makes an agent, a tool or a workflow (agent, tool, workflow)\n',
    });
    expect(existsSync(join(project, 'src/widgets'))).toBe(false);
  });

  it.each([
    ['agent', 'Triage', 'must be lower-case words'],
    ['agent', 'order_status', 'must be lower-case words'],
    ['tool', '2fast', 'must be lower-case words'],
    ['tool', 'a--b', 'must be lower-case words'],
    ['agent', 'delete', 'would be exported as delete, a name the generated code uses'],
    ['workflow', 'engine', 'would be exported as engine'],
    ['agent', 'define-agent', 'would be exported as defineAgent'],
    ['agent', 'x'.repeat(65), 'longer than 64 characters'],
  ])('refuses %s %j: exit 2, nothing written', async (kind, name, why) => {
    const yaml = readFileSync(join(project, 'axon.yaml'), 'utf8');
    const { code, stdout, stderr } = await axonIn(project, ['generate', kind, name]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(new RegExp(`^axon generate: "${name}" cannot name an? ${kind}: it `));
    expect(stderr).toContain(why);
    expect(readFileSync(join(project, 'axon.yaml'), 'utf8')).toBe(yaml);
  });

  it.each([
    ['agent', 'planner', 'axon serve registers an agent "planner" already (examples/trip-planner)'],
    ['agent', 'notebook', 'axon serve registers an agent "notebook" already (examples)'],
    [
      'tool',
      'search-flights',
      'axon serve registers a tool "search_flights" already (examples/trip-planner)',
    ],
    ['tool', 'add', 'axon serve registers a tool "add" already (examples)'],
  ])("refuses %s %s, a name of the examples' that serve registers too", async (kind, name, why) => {
    const { code, stderr } = await axonIn(project, ['generate', kind, name]);
    expect(code).toBe(2);
    expect(stderr).toBe(`axon generate: ${why}: choose another name\n`);
  });

  it('refuses outside an axon project, saying why', async () => {
    const outside = join(cwd, 'elsewhere');
    mkdirSync(outside);
    // Above a temp folder there is no package.json.
    const none = await axonIn(outside, ['generate', 'agent', 'triage']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /^axon generate: not in an axon project: no package\.json here or above \(axon new <name> makes one\): nothing was written\n$/,
    );

    writeFileSync(
      join(outside, 'package.json'),
      JSON.stringify({ name: 'other', dependencies: { zod: '^4.0.0' } }),
    );
    const other = await axonIn(outside, ['generate', 'agent', 'triage']);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('package.json does not depend on axon');

    writeFileSync(
      join(outside, 'package.json'),
      JSON.stringify({ name: 'other', dependencies: { axon: '^0.1.0' } }),
    );
    const noConfig = await axonIn(outside, ['generate', 'agent', 'triage']);
    expect(noConfig.code).toBe(2);
    expect(noConfig.stderr).toContain('has no axon.yaml');
    expect(readdirSync(outside)).toEqual(['package.json']);
  });

  it('refuses an axon.yaml whose code: is not a map of lists', async () => {
    writeFileSync(join(project, 'axon.yaml'), 'code:\n  agents: ./dist/agents\n');
    const { code, stderr } = await axonIn(project, ['generate', 'agent', 'triage']);
    expect(code).toBe(2);
    expect(stderr).toBe(
      'axon generate: axon.yaml: code.agents is not a list: nothing was written\n',
    );
    expect(existsSync(join(project, 'src/agents/triage.ts'))).toBe(false);
  });

  it('adds code: to an axon.yaml without it', async () => {
    writeFileSync(join(project, 'axon.yaml'), '# mine\nserver:\n  port: 7071\n');
    expect((await axonIn(project, ['generate', 'tool', 'lookup'])).code).toBe(0);
    expect(readFileSync(join(project, 'axon.yaml'), 'utf8')).toBe(
      '# mine\nserver:\n  port: 7071\ncode:\n  tools:\n    - { module: ./dist/tools/lookup.js, export: lookup }\n',
    );
  });
});
