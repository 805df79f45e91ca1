/**
 * @module What `axon new <name>` writes: a project a team can start from — `package.json`
 * depending on axon (and on the versions of zod, TypeScript, vitest and @types/node axon is
 * built and tested with), `tsconfig.json` (and `tsconfig.build.json`, which builds `src/`
 * into `dist/`), an agent that calls a tool and delegates to a second agent, its vitest test
 * on the scripted engine, `axon.yaml` naming them under `code:`, a README with the two
 * commands and `.gitignore`. Each builder returns the files' text by path in the project.
 */

/** The versions the project pins, taken from axon's own `package.json`. */
export interface ProjectPins {
  /** The range of the axon dependency (`^0.1.0`). */
  readonly axon: string;
  readonly zod: string;
  readonly typescript: string;
  readonly vitest: string;
  readonly typesNode: string;
  /** axon's `engines.node` (`>=20.19 <27`). */
  readonly node: string;
  /**
   * axon's `allowScripts`: the install scripts npm may run (better-sqlite3 builds its native
   * binding, which axon serve's SQLite store needs).
   */
  readonly allowScripts: Readonly<Record<string, boolean>>;
}

/** The files of a new project named `name` (an npm package name), by path. */
export function projectFiles(name: string, pins: ProjectPins): Readonly<Record<string, string>> {
  return {
    'package.json': packageJson(name, pins),
    'tsconfig.json': TSCONFIG,
    'tsconfig.build.json': TSCONFIG_BUILD,
    'axon.yaml': axonYaml(name),
    'README.md': readme(name),
    '.gitignore': 'node_modules/\ndist/\n.axon/\n',
    'src/tools/search-notes.ts': SEARCH_NOTES,
    'src/agents/researcher.ts': RESEARCHER,
    'src/agents/assistant.ts': ASSISTANT,
    'test/agents/assistant.test.ts': ASSISTANT_TEST,
  };
}

function packageJson(name: string, pins: ProjectPins): string {
  const pkg = {
    name,
    version: '0.1.0',
    private: true,
    description: 'Agents, tools and workflows served by axon',
    type: 'module',
    engines: { node: pins.node },
    scripts: {
      build: 'tsc -p tsconfig.build.json',
      typecheck: 'tsc -p tsconfig.json',
      test: 'vitest run',
      prestart: 'npm run build',
      start: 'axon serve',
    },
    dependencies: { axon: pins.axon, zod: pins.zod },
    devDependencies: {
      '@types/node': pins.typesNode,
      typescript: pins.typescript,
      vitest: pins.vitest,
    },
    allowScripts: pins.allowScripts,
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

const TSCONFIG = `${JSON.stringify(
  {
    compilerOptions: {
      target: 'ES2023',
      lib: ['ES2023'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      types: ['node'],
      strict: true,
      noUncheckedIndexedAccess: true,
      noImplicitOverride: true,
      noFallthroughCasesInSwitch: true,
      verbatimModuleSyntax: true,
      isolatedModules: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['src', 'test'],
  },
  null,
  2,
)}\n`;

const TSCONFIG_BUILD = `${JSON.stringify(
  {
    extends: './tsconfig.json',
    compilerOptions: { noEmit: false, rootDir: 'src', outDir: 'dist', sourceMap: true },
    include: ['src'],
  },
  null,
  2,
)}\n`;

function axonYaml(name: string): string {
  return `# axon serve's configuration for ${name}: \`npm start\` builds src/ into dist/ and serves the
# HTTP API on 127.0.0.1:7070, with these and axon's examples; \`npx axon list\` prints them all.
server:
  port: 7070
data_dir: ./.axon
# The agents, tools and workflows of this project: each a module (relative to this file) and
# the export holding what defineAgent, defineTool or defineWorkflow returned.
# \`npx axon generate agent|tool|workflow <name>\` adds one here, with its module and test.
code:
  agents:
    - { module: ./dist/agents/assistant.js, export: assistant }
    - { module: ./dist/agents/researcher.js, export: researcher }
  tools:
    - { module: ./dist/tools/search-notes.js, export: searchNotes }
`;
}

function readme(name: string): string {
  return `# ${name}

Agents served by [axon](https://www.npmjs.com/package/axon): \`assistant\` answers a question
from the team's notes — it calls the tool \`search_notes\`, then delegates the writing to the
agent \`researcher\`, which asks the runtime's engine.

\`\`\`sh
npm install && npm start   # builds src/ into dist/, serves the HTTP API on 127.0.0.1:7070
npm test                   # the agents' tests, on the scripted engine (no network)
\`\`\`

Ask the assistant over axon's HTTP API (a flow, a run, an \`agent\` step):

\`\`\`sh
flow=$(curl -s -X POST localhost:7070/v1/flows -H 'Content-Type: application/json' -d '{"name":"assistant"}' | node -p 'JSON.parse(require("fs").readFileSync(0)).flow_id')
run=$(curl -s -X POST localhost:7070/v1/flows/$flow/runs -H 'Content-Type: application/json' -d '{}' | node -p 'JSON.parse(require("fs").readFileSync(0)).run_id')
step=$(curl -s -X POST localhost:7070/v1/runs/$run/steps -H 'Content-Type: application/json' -d '{"type":"agent","client_token":"q1","input":{"agent":"assistant","message":"How do budgets work?"}}' | node -p 'JSON.parse(require("fs").readFileSync(0)).step_id')
curl -s localhost:7070/v1/steps/$step
\`\`\`

The trace UI at http://127.0.0.1:7070/ui shows the run: the assistant's step, the tool call
and the researcher's step below it.

## The project

| path | what it is |
| --- | --- |
| \`src/agents/assistant.ts\` | the agent \`assistant\`: calls \`search_notes\`, delegates to \`researcher\` |
| \`src/agents/researcher.ts\` | the agent \`researcher\`: writes the answer with the engine |
| \`src/tools/search-notes.ts\` | the tool \`search_notes\` over a few notes (put your data source here) |
| \`test/\` | vitest tests: a runtime in the test's process, the scripted engine |
| \`axon.yaml\` | what \`axon serve\` serves: the modules above, built into \`dist/\`, under \`code:\` |

- \`npx axon generate agent|tool|workflow <name>\` adds an agent, a tool or a workflow: its
  module in \`src/\`, its test in \`test/\`, and its line in \`axon.yaml\`.
- \`npx axon list\` prints what \`npm start\` serves: the project's agents, tools and
  workflows, and axon's examples.
- The engine is \`scripted\` (deterministic text, no network) unless you name another:
  \`AXON_ENGINE_URL\` (with \`AXON_ENGINE_KEY\`, \`AXON_ENGINE_MODEL\`) registers an
  OpenAI-compatible engine as \`openai\`; pass \`engine: 'openai'\` in the researcher's call.
- zod is the one axon uses: keep its version in the range axon's is, or \`defineTool\` refuses
  a schema made by another copy.
`;
}

const SEARCH_NOTES = `/**
 * The tool \`search_notes\`: finds the notes that share words with a query, best first. Put
 * your own data source (a database, an HTTP API) in place of NOTES.
 */
import { defineTool } from 'axon';
import { z } from 'zod';

/** A note the tool finds. */
export interface Note {
  readonly id: string;
  readonly text: string;
}

/** The notes it searches. */
export const NOTES: readonly Note[] = [
  {
    id: 'budgets',
    text: 'Every run has budgets: tokens in, tokens out, wall time and cost. A step past one ends with BUDGET_EXCEEDED.',
  },
  {
    id: 'delegation',
    text: 'An agent delegates to another agent with runtime.delegate: the other runs as a child step of the same run.',
  },
  {
    id: 'tools',
    text: 'A tool checks its arguments before it runs: arguments that do not fit end the call with SCHEMA_VIOLATION.',
  },
  {
    id: 'serving',
    text: 'npm start builds the project and runs axon serve, which serves the agents over HTTP.',
  },
];

/** The words of a text worth matching: lower case, four letters or more (not "the", "and"). */
function wordsOf(text: string): Set<string> {
  return new Set(text.toLowerCase().match(/[a-z0-9]{4,}/g) ?? []);
}

export const searchNotes = defineTool({
  name: 'search_notes',
  description: 'Finds the notes that share words with a query, best first.',
  input: z.strictObject({
    query: z.string().min(1),
    limit: z.number().int().min(1).max(10).default(3),
  }),
  handler: ({ query, limit }) => {
    const wanted = wordsOf(query);
    return NOTES.map((note) => ({
      note,
      score: [...wordsOf(note.text)].filter((w) => wanted.has(w)).length,
    }))
      .filter((hit) => hit.score > 0)
      .sort((a, b) => b.score - a.score || a.note.id.localeCompare(b.note.id))
      .slice(0, limit)
      .map((hit) => hit.note);
  },
});
`;

const RESEARCHER = `/**
 * The agent \`researcher\`: writes a two-sentence answer to a question from the notes it is given
 * (\`args.notes\`), through the runtime's engine — \`scripted\` (the default: deterministic
 * text, no network), or the one \`engine\` names (\`axon serve\` registers \`openai\` when
 * AXON_ENGINE_URL is set).
 */
import { defineAgent } from 'axon';
import { z } from 'zod';

/** What the researcher takes besides the question. */
const researchArgs = z.strictObject({
  notes: z.array(z.strictObject({ id: z.string(), text: z.string() })),
});

export const researcher = defineAgent({
  name: 'researcher',
  description: 'Writes a two-sentence answer to a question from the notes it is given.',
  handler: async (input, ctx, runtime) => {
    // Checked: a caller that sends no notes gets an error naming them, not an answer from nothing.
    const { notes } = researchArgs.parse(input.args);
    const reply = await runtime.chat(
      {
        messages: [
          {
            role: 'system',
            content: 'Answer in two sentences, only from the notes. Cite each note you use as [id].',
          },
          {
            role: 'user',
            content: \`Question: \${input.message}\\n\\nNotes:\\n\${notes.map((n) => \`[\${n.id}] \${n.text}\`).join('\\n')}\`,
          },
        ],
        params: { max_tokens: 80 },
      },
      ctx,
    );
    return reply.text;
  },
});
`;

const ASSISTANT = `/**
 * The agent \`assistant\`: answers a question from the team's notes. It calls the tool
 * \`search_notes\`, then delegates the writing to the agent \`researcher\` — each a child step of
 * the assistant's, in the same run (the trace UI shows the tree).
 */
import { defineAgent, needsData } from 'axon';
import type { Note } from '../tools/search-notes.js';

/** What the assistant answers: the text, and the ids of the notes it was written from. */
export interface Answer {
  readonly answer: string;
  readonly sources: readonly string[];
}

export const assistant = defineAgent({
  name: 'assistant',
  description: "Answers a question from the team's notes: searches them, has the researcher write.",
  handler: async (input, ctx, runtime) => {
    const found = await runtime.callTool<Note[]>('search_notes', { query: input.message }, ctx);
    if (found.status !== 'success' || found.output === null) {
      throw found.error ?? new Error(\`search_notes ended \${found.status}\`);
    }
    if (found.output.length === 0) {
      return needsData('No note matches; ask about budgets, delegation, tools or serving.');
    }
    const written = await runtime.delegate<string>(
      'researcher',
      { message: input.message, args: { notes: found.output } },
      ctx,
    );
    if (written.status !== 'success' || written.output === null) {
      throw written.error ?? new Error(\`researcher ended \${written.status}\`);
    }
    const answer: Answer = { answer: written.output, sources: found.output.map((n) => n.id) };
    return answer;
  },
});
`;

const ASSISTANT_TEST = `import { createRuntime, createScriptedEngine } from 'axon';
import { afterAll, describe, expect, it } from 'vitest';
import { assistant, type Answer } from '../../src/agents/assistant.js';
import { researcher } from '../../src/agents/researcher.js';
import { searchNotes } from '../../src/tools/search-notes.js';

// The scripted engine answers without a network: here, the ids of the notes it was given.
const engine = createScriptedEngine({
  tokenDelayMs: 0,
  script: (request) => {
    const cited = request.messages.at(-1)?.content.match(/\\[[a-z]+\\]/g) ?? [];
    return \`From \${cited.join(' ')}.\`;
  },
});
const runtime = createRuntime({
  agents: [assistant, researcher],
  tools: [searchNotes],
  engines: [engine],
});

describe('assistant', () => {
  afterAll(() => runtime.close());

  it('searches the notes, has the researcher write from the ones found, and names them', async () => {
    const result = await runtime.invoke<Answer>('assistant', 'How do budgets work?');
    expect(result.status).toBe('success');
    expect(result.output).toEqual({ answer: 'From [budgets].', sources: ['budgets'] });
  });

  it('asks for another question when no note matches', async () => {
    const result = await runtime.invoke('assistant', 'Where is Lisbon?');
    expect(result.status).toBe('needs_data');
  });

  it('the researcher refuses a call without notes', async () => {
    const result = await runtime.invoke('researcher', 'How do budgets work?');
    expect(result.status).toBe('error');
  });
});
`;
