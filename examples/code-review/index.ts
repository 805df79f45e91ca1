/**
 * @module The code-review example workflow (issue 21): a `coder` and a `reviewer` on the
 * scripted engine, and a `linter` that is a real command-line program (`node -e` on `lint-program.ts`'s source, run per
 * turn by a CLI adapter, its output streamed). The moderator: coder → linter → reviewer,
 * again from the coder until the reviewer approves (at most 9 turns). The scripted coder's
 * first version uses `var`, which the linter reports and the reviewer sends back; the
 * second passes.
 */
import { z } from 'zod';
import { createCliAdapter } from '../../src/adapters/cli-adapter.js';
import { createRole } from '../../src/adapters/create-role.js';
import type { ChatRequest } from '../../src/engines/chat-request.js';
import { LINT_PROGRAM } from './lint-program.js';
import { createScriptedEngine } from '../../src/engines/scripted-engine.js';
import type { Engine } from '../../src/engines/chat-request.js';
import {
  defineWorkflow,
  END,
  type ThreadSoFar,
  type WorkflowDefinition,
} from '../../src/workflows/workflow-definition.js';

/** What the linter answers. */
export const lintReport = z.object({ ok: z.boolean(), problems: z.array(z.string()) });
/** What the reviewer answers. */
export const review = z.object({ approved: z.boolean(), comment: z.string() });

const FIRST = [
  '```js',
  'var total = 0;',
  'export function add(a, b) {',
  '  return a + b;',
  '}',
  '```',
];
const SECOND = ['```js', 'export function add(a, b) {', '  return a + b;', '}', '```'];

/**
 * The name of the example's scripted engine: its own, so that it sits beside the runtime's
 * default `scripted` engine rather than replacing it.
 */
export const CODE_REVIEW_ENGINE = 'code-review-model';

/** The input of a thread triggered without one (`axon workflow trigger code-review`). */
export const CODE_REVIEW_INPUT = 'Write add(a, b) in JavaScript';

/** The scripted model: the coder's versions and the reviewer's verdicts, from the thread. */
function script(request: ChatRequest): string {
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  const thread = request.messages.find((m) => m.role === 'user')?.content ?? '';
  const versions = (thread.match(/^## coder$/gm) ?? []).length;
  if (system.startsWith('You are the coder')) {
    const code = versions === 0 ? FIRST : SECOND;
    return [`Version ${versions + 1} of add():`, ...code].join('\n');
  }
  const lastLint = [...thread.matchAll(/\{"ok":(true|false),"problems":\[(.*?)\]\}/g)].at(-1);
  const ok = lastLint?.[1] === 'true';
  return JSON.stringify(
    ok
      ? { approved: true, comment: 'Clean and simple. Approved.' }
      : {
          approved: false,
          comment: `Please fix what the linter found: ${lastLint?.[2] ?? 'no report'}`,
        },
  );
}

/** The moderator: coder → linter → reviewer, until the reviewer approves. */
export function codeReviewModerator(t: ThreadSoFar): string {
  const last = t.turns.at(-1);
  if (!last) return 'coder';
  if (last.role === 'coder') return 'linter';
  if (last.role === 'linter') return 'reviewer';
  return (last.output as z.infer<typeof review>).approved ? END : 'coder';
}

/**
 * The workflow and the engine its roles need; `tokenDelayMs` slows the scripted tokens
 * (default the scripted engine's: `AXON_SCRIPTED_TOKEN_MS`, else 5 ms).
 */
export function codeReview(options: { readonly tokenDelayMs?: number } = {}): {
  readonly workflow: WorkflowDefinition;
  readonly engines: readonly Engine[];
} {
  const linter = createRole(
    createCliAdapter({
      name: 'lint',
      command: process.execPath,
      args: ['-e', LINT_PROGRAM],
      timeoutMs: 30_000,
    }),
    'Lint the last code block.',
    lintReport,
  );
  const workflow = defineWorkflow({
    name: 'code-review',
    description:
      'a coder and a reviewer on the scripted engine, and a linter that is a real CLI program',
    roles: {
      coder: {
        kind: 'engine',
        engine: CODE_REVIEW_ENGINE,
        prompt: 'You are the coder: write the code asked for, as one code block.',
      },
      linter: { role: linter },
      reviewer: {
        kind: 'engine',
        engine: CODE_REVIEW_ENGINE,
        prompt: 'You are the reviewer: answer JSON {"approved": boolean, "comment": string}.',
        schema: review,
      },
    },
    moderator: codeReviewModerator,
    maxRounds: 9,
  });
  return {
    workflow,
    engines: [
      // Without a delay given, the scripted engine's own default: AXON_SCRIPTED_TOKEN_MS, else 5.
      createScriptedEngine({
        name: CODE_REVIEW_ENGINE,
        ...(options.tokenDelayMs === undefined ? {} : { tokenDelayMs: options.tokenDelayMs }),
        script,
      }),
    ],
  };
}
