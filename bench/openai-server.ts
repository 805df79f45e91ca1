/**
 * @module The local OpenAI-compatible server of bench:engine, in a process of its own so the
 * clients measured do not share its event loop. Prints its base URL on the first line.
 */
import { startOpenAICompatibleServer } from '../src/engines/openai-compatible-server.js';
import { createScriptedEngine } from '../src/engines/scripted-engine.js';

const server = await startOpenAICompatibleServer({
  engine: createScriptedEngine({ tokenDelayMs: 0, model: 'bench-model' }),
});
process.stdout.write(`${server.baseURL}\n`);
process.on('SIGTERM', () => {
  void server.close().then(() => process.exit(0));
});
