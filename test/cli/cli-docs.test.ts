/**
 * docs/cli.md against the CLI it documents: the help it quotes is the help `axon` prints, and
 * it has a section for every command and a row for every exit code.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HELP } from '../../src/cli/cli.js';
import { EXIT } from '../../src/cli/exit-codes.js';

const doc = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');

describe('docs/cli.md', () => {
  it('quotes `axon --help` as axon prints it', () => {
    expect(doc).toContain(`$ axon --help\n${HELP}\`\`\``);
  });

  it('has a section for every command the help lists', () => {
    const commands = [...HELP.matchAll(/^ {2}([a-z]+(?: [a-z]+)?)(?: [<[]\S+)* {2,}\S/gm)]
      .map((m) => m[1] ?? '')
      .filter((c) => c !== 'help');
    expect(commands).toEqual([
      'run',
      'serve',
      'mcp',
      'worker',
      'list',
      'new',
      'generate',
      'runs list',
      'trace',
      'workflow list',
      'workflow status',
      'workflow trigger',
      'thread list',
      'thread show',
      'thread inspect',
      'thread kill',
      'agents list',
      'agents show',
      'agents send',
      'schedules list',
      'schedules pause',
      'schedules resume',
      'schedules delete',
      'image build',
      'store copy',
    ]);
    for (const command of commands)
      expect(doc).toMatch(new RegExp(`^## \`axon ${command}\`$`, 'm'));
  });

  it('has a row for every exit code', () => {
    for (const code of Object.values(EXIT))
      expect(doc).toMatch(new RegExp(`^\\| ${code} +\\|`, 'm'));
  });
});
