/**
 * @module Seed 001's adapters as presets: `cursor-agent` in print mode and `hermes chat` in
 * single-query mode, each with the prompt as its last argument. Each has a default instance
 * and a factory for custom settings, as the seed's packages do.
 */
import { createCliAdapter, type CliAdapter, type CliAdapterOptions } from './cli-adapter.js';

/** What a preset factory takes: the adapter options other than the command line itself. */
export type PresetOptions = Omit<CliAdapterOptions, 'command' | 'input'> & {
  /** Override the executable (a path, or another name on `PATH`). */
  readonly command?: string;
};

/**
 * The Cursor CLI: `cursor-agent -p --output-format text <prompt>` (print mode, plain text
 * out).
 */
export function createCursorAdapter(options: PresetOptions = {}): CliAdapter {
  return createCliAdapter({
    name: 'cursor-agent',
    ...options,
    command: options.command ?? 'cursor-agent',
    args: options.args ?? ['-p', '--output-format', 'text'],
    input: 'arg',
  });
}

/** Nous Research's Hermes agent: `hermes chat -q <prompt>` (one query, then exit). */
export function createHermesAdapter(options: PresetOptions = {}): CliAdapter {
  return createCliAdapter({
    name: 'hermes',
    ...options,
    command: options.command ?? 'hermes',
    args: options.args ?? ['chat', '-q'],
    input: 'arg',
  });
}

/** `cursor-agent` with the defaults (found on `PATH` when called). */
export const cursorAdapter: CliAdapter = createCursorAdapter();

/** `hermes chat` with the defaults (found on `PATH` when called). */
export const hermesAdapter: CliAdapter = createHermesAdapter();
