/**
 * @module The A2A SDK's request handler with axon's rules in front of it: a message is routed
 * (`a2a-route-choice.ts`) before its task is made, so an unknown skill is an error and not a
 * failed task; a task takes one message (a message naming a task is refused: send a new one,
 * with the same `contextId` to keep a conversation together); no tenants; and a cancel of a
 * task this process is not running — its server was restarted, or another API process of a
 * fleet runs it — cancels its run, and with it its step.
 */
import type { Message, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import {
  DefaultExecutionEventBusManager,
  DefaultRequestHandler,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import type { AgentCard, CancelTaskRequest } from '@a2a-js/sdk';
import { RequestMalformedError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { ConflictError } from '../../errors/conflict-error.js';
import type { Router } from '../../orchestrator/route-result.js';
import type { Runtime } from '../../runtime/runtime.js';
import { a2aSkills } from './a2a-card.js';
import { callerIn, keepRoute } from './a2a-context.js';
import type { A2aExecutor } from './a2a-executor.js';
import { chooseA2aRoute } from './a2a-route-choice.js';
import { isTerminal } from './a2a-task-end.js';
import type { A2aTaskStore } from './a2a-task-store.js';

/** What the handler needs besides the SDK's parts. */
export interface A2aHandlerDeps {
  readonly runtime: Runtime;
  readonly tasks: A2aTaskStore;
  readonly executor: A2aExecutor;
  readonly router: Router | null;
  readonly defaultAgent: string | null;
}

/** See the module. */
export class A2aRequestHandler extends DefaultRequestHandler {
  readonly #deps: A2aHandlerDeps;
  readonly #buses: DefaultExecutionEventBusManager;

  constructor(card: AgentCard, deps: A2aHandlerDeps) {
    const buses = new DefaultExecutionEventBusManager();
    super(card, deps.tasks, deps.executor, buses);
    this.#deps = deps;
    this.#buses = buses;
  }

  override async sendMessage(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): Promise<Message | Task> {
    await this.#admit(params, context);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    await this.#admit(params, context);
    yield* super.sendMessageStream(params, context);
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    if (params.id !== '' && !this.#buses.getByTaskId(params.id, context)) {
      const task = await this.#deps.tasks.load(params.id, context);
      // Its run, whose step (after a restart, the one the restart submitted again) ends
      // `cancelled`, and the run with it.
      const runId = task ? await this.#deps.tasks.liveRunOf(params.id, context) : null;
      if (task && runId !== null && !isTerminal(task.status?.state)) {
        try {
          await (
            await this.#deps.runtime.cancelRun(runId)
          ).done;
        } catch (err) {
          // It ended meanwhile: the SDK then finds the task not cancelable, or canceled.
          if (!(err instanceof ConflictError)) throw err;
        }
      }
    }
    return super.cancelTask(params, context);
  }

  /** Checks a message and keeps its route in `context` (see the module). */
  async #admit(params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    // The SDK says what a request without a message is.
    const message = params.message;
    if (!message) return;
    if (params.tenant !== '') {
      throw new RequestMalformedError(`this server has no tenants (asked for "${params.tenant}")`);
    }
    if (message.taskId !== '') {
      throw new UnsupportedOperationError(
        `a task here takes one message: send a new message (the same contextId keeps a conversation together) instead of one to task ${message.taskId}`,
      );
    }
    const { runtime, router, defaultAgent } = this.#deps;
    const caller = callerIn(context);
    const route = await chooseA2aRoute(message, params.metadata, {
      skills: a2aSkills(runtime).map((s) => s.name),
      router,
      defaultAgent,
      context: () => runtime.createContext({ userId: caller.userId }),
    });
    keepRoute(context, route);
  }
}
