/**
 * @module `axon/contrib/nestjs` in a real Nest 12 application, on its Express platform and on
 * its Fastify platform, listening on a real port: the bridges' conformance suite through
 * `@AxonCtx()` and `@AxonReq()`, the application that forgets the module, and the module's
 * refusals of bad options and misplaced decorators.
 */
import { IncomingMessage, type IncomingHttpHeaders } from 'node:http';
import {
  Controller,
  HttpCode,
  Inject,
  Injectable,
  Module,
  Param,
  Post,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  type NestApplicationOptions,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentResult } from '../../../src/actors/agent-result.js';
import type { ExecContext } from '../../../src/context/exec-context.js';
import type { Runtime } from '../../../src/runtime/runtime.js';
import { HttpError } from '../../../src/server/http-errors.js';
import {
  AXON_RUNTIME,
  AxonCtx,
  AxonModule,
  AxonReq,
  type AxonModuleOptions,
} from '../../../src/server/contrib/nestjs.js';
import { headerLookup, type AxonRequest } from '../../../src/server/contrib/request-context.js';
import { useTestServers } from '../../support/server.js';
import {
  bridgeConformance,
  invokeReply,
  type BridgeServer,
  type StartBridge,
} from './bridge-conformance.js';

/** Where `POST /start/:agent` hands the invocation it leaves running. */
const BACKGROUND = Symbol('BACKGROUND');
type Background = (work: Promise<AgentResult>) => void;

/** The conformance suite's two routes, as a Nest user writes them. */
@Controller()
class InvokeController {
  constructor(
    @Inject(AXON_RUNTIME) private readonly runtime: Runtime,
    @Inject(BACKGROUND) private readonly background: Background,
  ) {}

  @Post('invoke/:agent')
  @HttpCode(200)
  async invoke(
    @Param('agent') agent: string,
    @AxonCtx() ctx: ExecContext,
    @AxonReq() axon: AxonRequest,
  ) {
    // One context a request, whichever decorator asks.
    if (ctx !== axon.ctx) throw new Error('@AxonCtx() and @AxonReq() gave two contexts');
    return invokeReply(axon, await this.runtime.invoke(agent, 'hi', ctx));
  }

  @Post('start/:agent')
  @HttpCode(202)
  start(@Param('agent') agent: string, @AxonCtx() ctx: ExecContext) {
    this.background(this.runtime.invoke(agent, 'hi', ctx));
    return { started: true };
  }
}

@Module({})
class AppModule {}

/** An application module that forgot `AxonModule.forRoot`. */
@Module({ controllers: [InvokeController], providers: [{ provide: BACKGROUND, useValue: null }] })
class ForgetfulModule {}

type Platform = 'express' | 'fastify';

/** A Nest application of `module` on `platform`, not yet listening. */
function nestApp(module: Parameters<typeof NestFactory.create>[0], platform: Platform) {
  // Without abortOnError: false, Nest ends the process when the application fails to start.
  // Nest 12 declares its options' base as a class; every Nest application passes a literal.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
  const options: NestApplicationOptions = {
    logger: false,
    abortOnError: false,
    forceCloseConnections: true,
  };
  return platform === 'express'
    ? NestFactory.create(module, new ExpressAdapter(), options)
    : NestFactory.create(module, new FastifyAdapter(), options);
}

async function listen(app: INestApplication): Promise<BridgeServer> {
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { url, close: () => app.close() };
}

const startNest =
  (platform: Platform): StartBridge =>
  async (runtime, options, background) => {
    const { identify, ...rest } = options;
    const module = {
      module: AppModule,
      imports: [
        AxonModule.forRoot({
          runtime,
          ...rest,
          ...(identify ? { identify: (request) => identify(headerLookup(request.headers)) } : {}),
        }),
      ],
      controllers: [InvokeController],
      providers: [{ provide: BACKGROUND, useValue: background }],
    };
    return listen(await nestApp(module, platform));
  };

bridgeConformance('nestjs-express', startNest('express'));
bridgeConformance('nestjs-fastify', startNest('fastify'));

/** The project's store (PostgreSQL under `http-on-postgres`). */
const stores = useTestServers('nestjs');

describe('AxonModule', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });

  it.each<Platform>(['express', 'fastify'])(
    'on %s, an application using @AxonCtx() without AxonModule.forRoot fails to start, saying to import it',
    async (platform) => {
      const started = nestApp(ForgetfulModule, platform);
      await expect(started).rejects.toThrow(TypeError);
      await expect(started).rejects.toThrow(
        /no AxonModule\.forRoot\(\{ runtime, \.\.\. \}\) is imported: add it to the imports of the application module/,
      );
    },
  );

  it.each<Platform>(['express', 'fastify'])(
    'on %s, a route without @AxonCtx() is neither refused nor given a correlation id',
    async (platform) => {
      const runtime = stores.runtime();
      cleanups.push(() => runtime.close());
      @Controller()
      class OpenController {
        @Post('open')
        @HttpCode(200)
        open() {
          return { open: true };
        }
      }
      const app = await nestApp(
        {
          module: AppModule,
          imports: [
            AxonModule.forRoot({ runtime, keys: [{ key: `k-${'x'.repeat(20)}`, user_id: 'u' }] }),
          ],
          controllers: [OpenController, InvokeController],
          providers: [{ provide: BACKGROUND, useValue: null }],
        },
        platform,
      );
      const server = await listen(app);
      cleanups.push(() => server.close());
      const open = await fetch(`${server.url}/open`, { method: 'POST' });
      expect(open.status).toBe(200);
      expect(await open.json()).toEqual({ open: true });
      expect(open.headers.get('x-correlation-id')).toBeNull();
      // The same application refuses the route that asks for the context.
      const refused = await fetch(`${server.url}/invoke/whoami`, { method: 'POST' });
      expect(refused.status).toBe(401);
    },
  );

  it.each<Platform>(['express', 'fastify'])(
    "on %s, identify gets the platform's request after the route's guards, and what it throws answers",
    async (platform) => {
      const runtime = stores.runtime();
      cleanups.push(() => runtime.close());
      interface GuardedRequest {
        readonly headers: IncomingHttpHeaders;
        user?: string;
        readonly raw?: unknown;
      }
      /** What an auth guard does: says who the user is on the request. */
      @Injectable()
      class UserGuard implements CanActivate {
        canActivate(context: ExecutionContext) {
          const request = context.switchToHttp().getRequest<GuardedRequest>();
          const user = request.headers['x-user'];
          if (typeof user === 'string') request.user = user;
          return true;
        }
      }
      @Controller()
      @UseGuards(UserGuard)
      class WhoController {
        @Post('who')
        @HttpCode(200)
        who(@AxonReq() axon: AxonRequest) {
          return { userId: axon.caller.userId, permissions: [...axon.caller.permissions] };
        }
      }
      const seen: GuardedRequest[] = [];
      const app = await nestApp(
        {
          module: AppModule,
          imports: [
            AxonModule.forRoot<GuardedRequest>({
              runtime,
              identify: (request) => {
                seen.push(request);
                if (request.user === 'hasty') {
                  throw new HttpError(429, 'RATE_LIMITED', 'slow down', { retry_after_ms: 2_500 });
                }
                return request.user === undefined
                  ? null
                  : { userId: request.user, permissions: ['read'] };
              },
            }),
          ],
          controllers: [WhoController],
        },
        platform,
      );
      const server = await listen(app);
      cleanups.push(() => server.close());
      const who = (headers: Record<string, string>) =>
        fetch(`${server.url}/who`, { method: 'POST', headers });

      const ada = await who({ 'x-user': 'ada' });
      expect(await ada.json()).toEqual({ userId: 'ada', permissions: ['read'] });
      // Express's request is Node's; Fastify's holds Node's as raw.
      const request = seen[0];
      if (platform === 'express') expect(request).toBeInstanceOf(IncomingMessage);
      else expect(request?.raw).toBeInstanceOf(IncomingMessage);

      const hasty = await who({ 'x-user': 'hasty', 'x-correlation-id': 'c-429' });
      expect(hasty.status).toBe(429);
      expect(hasty.headers.get('retry-after')).toBe('3');
      expect(hasty.headers.get('x-correlation-id')).toBe('c-429');
      expect(await hasty.json()).toEqual({
        error: { code: 'RATE_LIMITED', message: 'slow down', details: { retry_after_ms: 2_500 } },
        correlation_id: 'c-429',
      });
      const nobody = await who({});
      expect(nobody.status).toBe(401);
    },
  );

  it('refuses options it cannot use, naming them', () => {
    const runtime = stores.runtime();
    cleanups.push(() => runtime.close());
    const make = (options: unknown) => () => AxonModule.forRoot(options as AxonModuleOptions);
    expect(make(undefined)).toThrow(/^AxonModule\.forRoot: options must be \{ runtime, \.\.\. \}/);
    expect(make({ anonymous: 'allow' })).toThrow(
      /^AxonModule\.forRoot: runtime must be an axon runtime \(createRuntime\(\.\.\.\)\), got undefined$/,
    );
    expect(make({ runtime: {}, anonymous: 'allow' })).toThrow(/runtime must be an axon runtime/);
    expect(make({ runtime, anonymous: 'allow', orchestrator: {} })).toThrow(
      /^AxonModule\.forRoot: unknown option orchestrator \(the Nest module serves no chat routes: call orchestrator\.handle\(message, \{ ctx \}\) from a route/,
    );
    expect(make({ runtime, anonymous: 'allow', annonymous: 'allow', prefix: '/a' })).toThrow(
      /^AxonModule\.forRoot: unknown options annonymous, prefix$/,
    );
    // The rules of every bridge, under this name.
    expect(make({ runtime })).toThrow(
      /^AxonModule\.forRoot: give keys or identify to say who calls, or anonymous: 'allow'/,
    );
    expect(make({ runtime, anonymous: 'maybe' })).toThrow(/anonymous must be 'allow' or 'refuse'/);
    for (const bad of [undefined, {}, null, 'x']) {
      expect(make(bad)).toThrow(TypeError);
    }
    const module = AxonModule.forRoot({ runtime, anonymous: 'allow' });
    expect(module).toMatchObject({ module: AxonModule, global: true });
  });

  it('refuses @AxonCtx() given arguments, or put on a constructor parameter', () => {
    // As a JavaScript caller may: TypeScript refuses the arguments.
    const withArgs: (...args: unknown[]) => ParameterDecorator = AxonCtx;
    expect(() => withArgs('user')).toThrow(/^@AxonCtx\(\) takes no arguments, got 1$/);
    const reqWithArgs: (...args: unknown[]) => ParameterDecorator = AxonReq;
    expect(() => reqWithArgs({}, {})).toThrow(/^@AxonReq\(\) takes no arguments, got 2$/);
    expect(() => {
      class Service {
        constructor(@AxonCtx() readonly ctx: ExecContext) {}
      }
      return Service;
    }).toThrow(/^@AxonCtx\(\) goes on a parameter of a route handler, not of a constructor/);
  });
});
