/**
 * @module The workflows `axon serve` runs, and the CLI's `workflow` commands on a data dir
 * assume a server there would run: those of `axon.yaml`'s `workflows:` key, plus the
 * example `code-review` (examples/code-review) unless the file declares a workflow of that
 * name, which then replaces it.
 */
import { codeReview } from '../../../examples/code-review/index.js';
import type { Engine } from '../../engines/chat-request.js';
import type { WorkflowDefinition } from '../../workflows/workflow-definition.js';
import { EXAMPLE_WORKFLOW } from '../cli-defaults.js';

export { DEFAULT_INPUTS, EXAMPLE_WORKFLOW } from '../cli-defaults.js';

/** What {@link servedWorkflows} gives: the workflows, and the engines their roles need. */
export interface ServedWorkflows {
  readonly workflows: readonly WorkflowDefinition[];
  /** The example's scripted engine (`code-review-model`); register it on the runtime. */
  readonly engines: readonly Engine[];
  /** Whether the configured workflows replaced the example (one was named like it). */
  readonly exampleReplaced: boolean;
}

/**
 * `configured` plus the example `code-review`, which a configured workflow of the same name
 * replaces. `tokenDelayMs` slows the example's scripted tokens (default
 * `AXON_SCRIPTED_TOKEN_MS`, else 5 ms, as every scripted engine's).
 */
export function servedWorkflows(
  configured: readonly WorkflowDefinition[],
  options: { readonly tokenDelayMs?: number } = {},
): ServedWorkflows {
  const example = codeReview(
    options.tokenDelayMs === undefined ? {} : { tokenDelayMs: options.tokenDelayMs },
  );
  const exampleReplaced = configured.some((w) => w.name === EXAMPLE_WORKFLOW);
  return {
    workflows: exampleReplaced ? configured : [...configured, example.workflow],
    engines: example.engines,
    exampleReplaced,
  };
}
