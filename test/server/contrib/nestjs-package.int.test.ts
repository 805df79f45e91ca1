/**
 * @module `axon/contrib/nestjs` (and `axon/nestjs`) as a package that depends on axon gets
 * it: resolved through package.json's `exports` to the built `dist/`, run by plain Node (no
 * TypeScript loader, no decorator syntax, no emitted metadata) in a real Nest application;
 * and axon's main entry loads without any `@nestjs/*` package, which only the bridge needs.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The package root, where `npm run build` writes dist/. */
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BUILT = join(ROOT, 'dist/src/server/contrib/nestjs.js');

interface Exit {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(cwd: string, args: readonly string[], command = 'node'): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    // Plain Node: no loader vitest's environment may carry.
    delete env['NODE_OPTIONS'];
    const child = spawn(command, [...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

/** A Nest application from the built bridge, its decorators applied as the calls they are. */
const NEST_APP = `
import { Controller, HttpCode, Inject, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { createLogger, createRuntime, defineAgent } from 'axon';
import { AXON_RUNTIME, AxonCtx, AxonModule } from 'axon/contrib/nestjs';
import * as short from 'axon/nestjs';

const whoami = defineAgent({ name: 'whoami', handler: (_input, ctx) => ({ userId: ctx.userId }) });
const runtime = createRuntime({ agents: [whoami], logger: createLogger({ level: 'silent' }) });

class WhoController {
  constructor(runtime) { this.runtime = runtime; }
  async who(ctx) { return (await this.runtime.invoke('whoami', 'hi', ctx)).output; }
}
Controller()(WhoController);
Inject(AXON_RUNTIME)(WhoController, undefined, 0);
AxonCtx()(WhoController.prototype, 'who', 0);
const who = Object.getOwnPropertyDescriptor(WhoController.prototype, 'who');
HttpCode(200)(WhoController.prototype, 'who', who);
Post('who')(WhoController.prototype, 'who', who);

class AppModule {}
Module({
  imports: [AxonModule.forRoot({ runtime, keys: [{ key: 'key-of-the-web-app-0001', user_id: 'web' }] })],
  controllers: [WhoController],
})(AppModule);

const app = await NestFactory.create(AppModule, { logger: false, abortOnError: false });
await app.listen(0, '127.0.0.1');
const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
const post = (headers) => fetch(url + '/who', { method: 'POST', headers });
const ok = await post({ authorization: 'Bearer key-of-the-web-app-0001' });
const refused = await post({});
console.log(JSON.stringify({
  resolved: import.meta.resolve('axon/contrib/nestjs'),
  same: short.AxonModule === AxonModule && short.AxonCtx === AxonCtx,
  exports: Object.keys(short).sort(),
  ok: [ok.status, await ok.json()],
  refused: [refused.status, (await refused.json()).error.code],
}));
await app.close();
await runtime.close();
`;

describe('axon/contrib/nestjs from a package that depends on axon', () => {
  let dir = '';

  beforeAll(async () => {
    if (!existsSync(BUILT)) {
      const build = await run(ROOT, ['run', 'build'], 'npm');
      expect(build.code, `npm run build failed:\n${build.stdout}\n${build.stderr}`).toBe(0);
    }
    // A package of its own with axon installed as a link, as `npm install ../axon` makes it,
    // and Nest beside it (the peer a Nest application has).
    dir = mkdtempSync(join(tmpdir(), 'axon-nest-consumer-'));
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(ROOT, join(dir, 'node_modules/axon'), 'dir');
    symlinkSync(join(ROOT, 'node_modules/@nestjs'), join(dir, 'node_modules/@nestjs'), 'dir');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'nest-consumer', type: 'module', dependencies: { axon: '*' } }),
    );
    writeFileSync(join(dir, 'app.mjs'), NEST_APP);
    // A resolve hook that refuses every @nestjs/* import, to see who asks for one.
    writeFileSync(
      join(dir, 'refuse-nest-hooks.mjs'),
      `export async function resolve(specifier, context, next) {
        if (specifier.startsWith('@nestjs/')) throw new Error('refused ' + specifier + ' from ' + context.parentURL);
        return next(specifier, context);
      }`,
    );
    writeFileSync(
      join(dir, 'refuse-nest.mjs'),
      `import { register } from 'node:module';\nregister('./refuse-nest-hooks.mjs', import.meta.url);\n`,
    );
  }, 180_000);

  afterAll(() => {
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('resolves to the built file and serves a real Nest application with @AxonCtx()', async () => {
    const exit = await run(dir, ['app.mjs']);
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    const out = JSON.parse(exit.stdout) as Record<string, unknown>;
    expect(out).toEqual({
      // Through the link to the package's real path, as Node resolves a linked package.
      resolved: pathToFileURL(BUILT).href,
      same: true,
      exports: ['AXON_RUNTIME', 'AxonCtx', 'AxonModule', 'AxonReq'],
      ok: [200, { userId: 'web' }],
      refused: [401, 'UNAUTHORIZED'],
    });
  });

  it('loads axon without any @nestjs package; only axon/contrib/nestjs asks for one', async () => {
    const main = await run(dir, [
      '--import',
      './refuse-nest.mjs',
      '--input-type=module',
      '--eval',
      "const axon = await import('axon'); console.log(typeof axon.createRuntime);",
    ]);
    expect(main.stderr).toBe('');
    expect(main.stdout).toBe('function\n');
    expect(main.code).toBe(0);
    // The hook does refuse: the bridge, under the same hook, cannot load.
    const bridge = await run(dir, [
      '--import',
      './refuse-nest.mjs',
      '--input-type=module',
      '--eval',
      "await import('axon/contrib/nestjs');",
    ]);
    expect(bridge.code).not.toBe(0);
    expect(bridge.stderr).toMatch(/refused @nestjs\/common from .*\/contrib\/nestjs\.js/);
  });
});
