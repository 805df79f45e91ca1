import { describe, expect, it } from 'vitest';
import { CODE_REVIEW_INPUT } from '../../examples/code-review/index.js';
import { EXAMPLES } from '../../examples/index.js';
import * as defaults from '../../src/cli/cli-defaults.js';
import { LOG_LEVELS } from '../../src/observability/logger.js';
import { DEFAULT_INPUTS, EXAMPLE_WORKFLOW } from '../../src/cli/serve/served-workflows.js';
import { SERVE_DEFAULTS, STORE_FILE } from '../../src/cli/serve/serve-config.js';

// cli-defaults.ts copies values that live in modules `axon --help` must not load; each copy
// is the value it stands for.
describe('cli-defaults: the help constants equal what the commands use', () => {
  it('names every example axon run knows, in order', () => {
    expect(defaults.EXAMPLE_NAMES).toEqual(Object.keys(EXAMPLES));
  });
  it("gives code-review's own default input", () => {
    expect(defaults.DEFAULT_INPUTS[defaults.EXAMPLE_WORKFLOW]).toBe(CODE_REVIEW_INPUT);
    expect(DEFAULT_INPUTS).toBe(defaults.DEFAULT_INPUTS);
    expect(EXAMPLE_WORKFLOW).toBe('code-review');
  });
  it("lists the logger's levels", () => {
    expect(defaults.LOG_LEVEL_NAMES).toEqual(LOG_LEVELS);
  });
  it('is where serve-config takes its defaults from', () => {
    expect(SERVE_DEFAULTS).toBe(defaults.SERVE_DEFAULTS);
    expect(STORE_FILE).toBe('axon.db');
  });
});
