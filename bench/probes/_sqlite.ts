import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineAgent } from '../../src/actors/define-agent.js';
import { createLogger } from '../../src/observability/logger.js';
import { createRuntime } from '../../src/runtime/runtime.js';
import { sqliteStore } from '../../src/store/sqlite-store.js';
import { memoryStore } from '../../src/store/memory-store.js';
const b = defineAgent({ name: 'b', handler: () => 'b' });
const a = defineAgent({ name: 'a', handler: async (input, ctx, runtime) => (await runtime.delegate('b', input, ctx)).output });
const dir = mkdtempSync(join(tmpdir(), 'sq-'));
const store = process.env['MEM'] ? memoryStore() : sqliteStore(join(dir, 'x.db'));
const rt = createRuntime({ agents: [a, b], store, logger: createLogger({ level: 'silent' }) });
let n = 0;
const t0 = performance.now();
while (performance.now() - t0 < 4000) {
  await Promise.all(Array.from({ length: 16 }, () => rt.invoke('a', 'x')));
  n += 16;
}
console.log('runs/s', Math.round(n / ((performance.now() - t0) / 1000)));
await rt.close();
