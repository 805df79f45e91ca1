/**
 * @module What `axon generate agent|tool|workflow <name>` writes into a project: the module
 * that defines it with axon's public API (`import … from 'axon'`) and its vitest test on the
 * scripted engine (no network). Each builder returns the files' text by path, relative to the
 * project; `generate-item.ts` writes them and names the module in `axon.yaml`'s `code:`.
 */
import { exportNameOf, toolNameOf } from './package-name.js';

/** The kinds `axon generate` makes, as the command line names them. */
export const ITEM_KINDS = ['agent', 'tool', 'workflow'] as const;
/** One of {@link ITEM_KINDS}. */
export type ItemKind = (typeof ITEM_KINDS)[number];

/** The folder under `src/` (and `test/`) of each kind, and its key under `code:`. */
export const ITEM_FOLDERS: Readonly<Record<ItemKind, 'agents' | 'tools' | 'workflows'>> = {
  agent: 'agents',
  tool: 'tools',
  workflow: 'workflows',
};

/** The files of one generated item: its module and its test, by path in the project. */
export interface ItemFiles {
  /** `src/agents/<name>.ts`. */
  readonly modulePath: string;
  /** Where `npm run build` puts it: `dist/agents/<name>.js`, which `axon.yaml` names. */
  readonly builtPath: string;
  /** The export holding the definition. */
  readonly exportName: string;
  /** The name it is registered under (a tool's in snake_case). */
  readonly registeredName: string;
  readonly files: Readonly<Record<string, string>>;
}

/** The files `axon generate <kind> <name>` writes. `name` must be checked (`itemNameProblem`). */
export function itemFiles(kind: ItemKind, name: string): ItemFiles {
  const folder = ITEM_FOLDERS[kind];
  const exportName = exportNameOf(name);
  const registeredName = kind === 'tool' ? toolNameOf(name) : name;
  const modulePath = `src/${folder}/${name}.ts`;
  const testPath = `test/${folder}/${name}.test.ts`;
  const make = { agent: agentFiles, tool: toolFiles, workflow: workflowFiles }[kind];
  const [source, test] = make(name, exportName, registeredName);
  return {
    modulePath,
    builtPath: `dist/${folder}/${name}.js`,
    exportName,
    registeredName,
    files: { [modulePath]: source, [testPath]: test },
  };
}

function agentFiles(name: string, exp: string, registered: string): [string, string] {
  const source = `/**
 * The agent \`${registered}\`: answers a message in one sentence, through the runtime's engine —
 * \`scripted\` (the default: deterministic text, no network), or the one \`engine\` names
 * (\`axon serve\` registers \`openai\` when AXON_ENGINE_URL is set).
 */
import { defineAgent } from 'axon';

export const ${exp} = defineAgent({
  name: '${registered}',
  description: 'Answers a message in one sentence.',
  handler: async (input, ctx, runtime) => {
    const reply = await runtime.chat(
      {
        messages: [
          { role: 'system', content: 'Answer in one sentence.' },
          { role: 'user', content: input.message },
        ],
        params: { max_tokens: 48 },
      },
      ctx,
    );
    return reply.text;
  },
});
`;
  const test = `import { createRuntime, createScriptedEngine } from 'axon';
import { afterAll, describe, expect, it } from 'vitest';
import { ${exp} } from '../../src/agents/${name}.js';

// The scripted engine answers without a network: here, the same sentence for every request.
const engine = createScriptedEngine({ tokenDelayMs: 0, script: () => 'It is done.' });
const runtime = createRuntime({ agents: [${exp}], engines: [engine] });

describe('${registered}', () => {
  afterAll(() => runtime.close());

  it("answers with its engine's sentence", async () => {
    const result = await runtime.invoke<string>('${registered}', 'Is it done?');
    expect(result.status).toBe('success');
    expect(result.output).toBe('It is done.');
  });
});
`;
  return [source, test];
}

function toolFiles(name: string, exp: string, registered: string): [string, string] {
  const source = `/**
 * The tool \`${registered}\`: counts the words of a text. Its arguments are checked against
 * \`input\` before every call; a call whose arguments do not fit ends with SCHEMA_VIOLATION and
 * the handler never runs.
 */
import { defineTool } from 'axon';
import { z } from 'zod';

export const ${exp} = defineTool({
  name: '${registered}',
  description: 'Counts the words of a text.',
  input: z.strictObject({ text: z.string() }),
  handler: ({ text }) => ({ words: text.split(/\\s+/).filter((w) => w !== '').length }),
});
`;
  const test = `import { createRuntime } from 'axon';
import { afterAll, describe, expect, it } from 'vitest';
import { ${exp} } from '../../src/tools/${name}.js';

const runtime = createRuntime({ tools: [${exp}] });

describe('${registered}', () => {
  afterAll(() => runtime.close());

  it('counts the words of a text', async () => {
    const result = await runtime.callTool('${registered}', { text: ' two  words ' }, runtime.createContext());
    expect(result.status).toBe('success');
    expect(result.output).toEqual({ words: 2 });
  });

  it('refuses arguments its input does not take, without running', async () => {
    const result = await runtime.callTool('${registered}', { text: 42 }, runtime.createContext());
    expect(result.status).toBe('error');
    expect(result.error?.code).toBe('SCHEMA_VIOLATION');
  });
});
`;
  return [source, test];
}

function workflowFiles(name: string, exp: string, registered: string): [string, string] {
  const source = `/**
 * The workflow \`${registered}\`: a writer and a critic take turns on a request until the critic
 * says APPROVED (or after four turns). Each role is a model's turn over the runtime's engine
 * (default \`scripted\`); a role can also be an agent (\`{ kind: 'agent', agent: 'assistant' }\`).
 */
import { defineWorkflow, END } from 'axon';

export const ${exp} = defineWorkflow({
  name: '${registered}',
  description: 'A writer and a critic take turns until the critic approves.',
  roles: {
    writer: { kind: 'engine', prompt: 'You write a short answer to the request.' },
    critic: { kind: 'engine', prompt: 'You review the last answer. Say APPROVED when it is good.' },
  },
  // A pure function of the thread so far: a resumed thread asks it again.
  moderator: (thread) => {
    const last = thread.turns.at(-1);
    if (last?.role === 'critic' && last.raw.includes('APPROVED')) return END;
    return last?.role === 'writer' ? 'critic' : 'writer';
  },
  maxRounds: 4,
});
`;
  const test = `import { createRuntime, createScriptedEngine, createWorkflowEngine } from 'axon';
import { afterAll, describe, expect, it } from 'vitest';
import { ${exp} } from '../../src/workflows/${name}.js';

// The scripted engine answers without a network: the critic approves, the writer drafts.
const engine = createScriptedEngine({
  tokenDelayMs: 0,
  script: (request) =>
    request.messages[0]?.content.startsWith('You review') ? 'APPROVED' : 'A first draft.',
});
const runtime = createRuntime({ engines: [engine] });
const workflows = createWorkflowEngine(runtime, [${exp}]);

describe('${registered}', () => {
  afterAll(async () => {
    await workflows.close();
    await runtime.close();
  });

  it('ends when the critic approves the draft', async () => {
    const started = await workflows.trigger('${registered}', 'Describe axon in a sentence.');
    const thread = await workflows.wait(started.thread_id);
    expect(thread.status).toBe('completed');
    expect(thread.turns.map((t) => [t.role, t.raw])).toEqual([
      ['writer', 'A first draft.'],
      ['critic', 'APPROVED'],
    ]);
  });
});
`;
  return [source, test];
}
