/** @module The `add` tool of API.md's embedded defaults. */
import { z } from 'zod';
import { defineTool } from '../../src/tools/define-tool.js';

/** `add({ a, b })` → `{ sum: a + b }`; both numbers required, nothing else allowed. */
export const addTool = defineTool({
  name: 'add',
  description: 'Adds two numbers and returns { sum }.',
  input: z.strictObject({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => ({ sum: a + b }),
});
