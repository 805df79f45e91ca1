/**
 * @module bench:container's warm floor: the container's own step runner
 * (`container-runner.mjs`, the very file a container runs) as a plain child process, its
 * link the child's standard input and output, driven one step at a time with the message
 * container placement sends — no container, no engine, no relay. Nothing in it may be
 * slower than container placement's own path: it sends the same `step` line through the
 * same `LineLink`, to the same program, which runs the same handler and answers the same
 * `result` line; anything else it answers fails the bench.
 */
import { spawn } from 'node:child_process';
import type { ExecContext } from '../src/context/exec-context.js';
import type { AgentInput } from '../src/actors/agent-result.js';
import { LineLink } from '../src/placement/container/line-link.js';
import { WORKER_STREAM_CREDIT } from '../src/placement/worker/worker-placement.js';
import type { LinkDown, WorkerOutcome } from '../src/placement/worker/worker-protocol.js';

/** A runner in a plain child process, taking one step at a time. */
export interface PipePeer {
  /**
   * Runs the behaviour on `input` in the child with `ctx`'s wire form, as container
   * placement's step message does; resolves the handler's output.
   */
  step(input: AgentInput, ctx: ExecContext): Promise<unknown>;
  /** Ends the link: the runner exits. */
  close(): Promise<void>;
}

/** What the peer's steps run: the agent's name, and the module and export holding it. */
export interface PipeBehaviour {
  readonly agent: string;
  readonly module: string;
  readonly export: string;
}

/** Starts `runner` (the bundled `container-runner.mjs`) as a child serving `behaviour`. */
export function startPipePeer(runner: string, behaviour: PipeBehaviour): PipePeer {
  const child = spawn(process.execPath, [runner], { stdio: ['pipe', 'pipe', 'inherit'] });
  const link = new LineLink(child.stdout, child.stdin);
  let waiting: {
    readonly stepId: string;
    readonly resolve: (output: unknown) => void;
    readonly reject: (err: Error) => void;
  } | null = null;
  const fail = (why: string): void => {
    const w = waiting;
    waiting = null;
    w?.reject(new Error(`the pipe peer ${why}`));
  };
  link.on('message', (message: { t?: unknown; step?: unknown; outcome?: WorkerOutcome }) => {
    if (message.t === 'ready') return;
    const w = waiting;
    if (message.t !== 'result' || w === null || message.step !== w.stepId || !message.outcome) {
      fail(`sent ${JSON.stringify(message).slice(0, 200)}`);
      return;
    }
    waiting = null;
    const outcome = message.outcome;
    if (!outcome.ok) w.reject(new Error(`the pipe peer's step failed: ${outcome.error.message}`));
    else w.resolve('output' in outcome ? outcome.output : outcome.outcome);
  });
  link.on('close', () => {
    fail('closed its link');
  });
  const exited = new Promise<void>((resolve) => {
    child.once('close', () => {
      resolve();
    });
  });
  return {
    step(input, ctx) {
      const stepId = ctx.stepId;
      if (stepId === null) return Promise.reject(new Error('a step context has a step id'));
      return new Promise((resolve, reject) => {
        waiting = { stepId, resolve, reject };
        const message: LinkDown = {
          t: 'step',
          task: {
            agent: behaviour.agent,
            kind: 'agent',
            module: behaviour.module,
            export: behaviour.export,
            input,
            ctx: ctx.toWire(),
            stepId,
            credit: WORKER_STREAM_CREDIT,
          },
        };
        link.postMessage(message);
      });
    },
    async close() {
      child.stdin.end();
      await exited;
    },
  };
}
