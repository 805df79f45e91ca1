/**
 * The line link a container speaks on (issue 31): one JSON object per line both ways, a
 * line that is not one handed aside, a line past its bound ending the link.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineLink } from '../../../src/placement/container/line-link.js';

function link(maxLineBytes?: number) {
  const input = new PassThrough();
  const written: string[] = [];
  const stray: string[] = [];
  const l = new LineLink(input, (line) => written.push(line), {
    ...(maxLineBytes ? { maxLineBytes } : {}),
    onStray: (line) => stray.push(line),
  });
  const messages: unknown[] = [];
  l.on('message', (m) => messages.push(m));
  return { input, l, written, stray, messages };
}

const turn = () => new Promise((r) => setImmediate(r));

describe('LineLink', () => {
  it('reads objects split across chunks and in one chunk; writes one line per message', async () => {
    const { input, l, written, messages } = link();
    input.write('{"t":"a","n":1}\n{"t":');
    input.write('"b","s":"é"}\n');
    await turn();
    expect(messages).toEqual([
      { t: 'a', n: 1 },
      { t: 'b', s: 'é' },
    ]);
    l.postMessage({ t: 'step', x: [1] });
    expect(written).toEqual(['{"t":"step","x":[1]}\n']);
  });

  it('hands lines that are not JSON objects aside', async () => {
    const { input, stray, messages } = link();
    input.write('plain text\n[1,2]\n{broken\nnull\n{"t":"ok"}\n');
    await turn();
    expect(stray).toEqual(['plain text', '[1,2]', '{broken', 'null']);
    expect(messages).toEqual([{ t: 'ok' }]);
  });

  it('a line past its bound ends the link, reading nothing more', async () => {
    const { input, l, messages } = link(32);
    const events: string[] = [];
    l.on('overflow', () => events.push('overflow'));
    l.on('close', () => events.push('close'));
    input.write(`{"t":"x","pad":"${'a'.repeat(64)}"}\n{"t":"after"}\n`);
    await turn();
    expect(events).toEqual(['overflow', 'close']);
    expect(messages).toEqual([]);
    expect(l.closed).toBe(true);
  });

  it('closes once when its input ends, reading a last line without a newline', async () => {
    const { input, l, messages } = link();
    let closes = 0;
    l.on('close', () => closes++);
    input.end('{"t":"last"}');
    await turn();
    await turn();
    expect(messages).toEqual([{ t: 'last' }]);
    expect(closes).toBe(1);
    l.postMessage({ t: 'ignored' });
  });
});
