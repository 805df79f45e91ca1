/**
 * @module Starting one container of the pool: the engine's `run` with the pool's flags, the
 * container's program and the behaviour's module folder mounted read-only, and the links to
 * it. With podman the step messages go over a socket handed to the container (`linkFd`),
 * host to container with no relay, and standard output carries only what the init says
 * when the runner dies (`died`); with docker both go over the standard streams.
 */
import type { ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import type { Socket } from 'node:net';
import type { ContainerProgram } from './container-bundle.js';
import type { ContainerEngine } from './container-engine.js';
import {
  containerRunFlags,
  type ContainerMount,
  type ResolvedContainerOptions,
} from './container-options.js';
import {
  CONTAINER_ENTRY_PATH,
  CONTAINER_MODULE_DIR,
  CONTAINER_RUNNER_PATH,
} from './container-wire.js';
import { LineLink } from './line-link.js';

/** What a container step runs, and with which folders of the host. */
export interface ContainerLaunch {
  readonly kind: 'agent' | 'tool';
  readonly name: string;
  /** The module's path on the host; its folder is mounted read-only. */
  readonly module: string;
  readonly export: string;
  readonly mounts: readonly ContainerMount[];
}

/**
 * The launch's key: a container serves the steps of one key. Each part is length-prefixed,
 * so no two launches share one.
 */
export function launchKey(launch: ContainerLaunch): string {
  const mounts = launch.mounts.length === 0 ? '' : JSON.stringify(launch.mounts);
  return [launch.kind, launch.name, launch.module, launch.export, mounts]
    .map((part) => `${part.length}:${part}`)
    .join('');
}

/** A started container, seen from the host. */
export interface StartedContainer {
  /** The engine's client: its exit (`close`) is the container's end. */
  readonly child: ChildProcess;
  /** The step messages, both ways. */
  readonly link: LineLink;
  /** Ends the link from this side: the runner exits, and the container with it. */
  readonly end: () => void;
}

/** Where what a started container says goes. */
export interface ContainerListener {
  /** A message: on the link, or the init's `died` line. */
  readonly onMessage: (message: Record<string, unknown>) => void;
  /** What it writes that is not a message, standard error included. */
  readonly onText: (text: string) => void;
  /** It broke the protocol: what it did. */
  readonly onViolation: (what: string) => void;
}

/**
 * How long a container's client may take to exit once its container is removed (past it, it
 * is killed), and to close its streams once it has exited: the container holds the link's
 * other end, and one its engine could not kill (a wedged `conmon`) would hold it for ever;
 * past this the streams are closed from this side.
 */
export const EXITED_STREAMS_MS = 2_000;

/**
 * Removes container `name`; its client `child` goes with it, or is killed if it has not exited
 * within {@link EXITED_STREAMS_MS} (one stopped), and at once when the removal fails
 * (`onFailed` is told why).
 */
export function removeContainer(
  engine: ContainerEngine,
  name: string,
  child: ChildProcess,
  onFailed: (err: unknown) => void,
): void {
  void engine.remove([name]).then(
    () => {
      setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }, EXITED_STREAMS_MS).unref();
    },
    (err: unknown) => {
      onFailed(err);
      child.kill('SIGKILL');
    },
  );
}

/** Starts a container named `name` for `launch`; what it says goes `to` the pool. */
export function startContainer(
  engine: ContainerEngine,
  program: ContainerProgram,
  options: ResolvedContainerOptions,
  name: string,
  labels: { readonly pool: string; readonly behaviour: string },
  launch: ContainerLaunch,
  to: ContainerListener,
): StartedContainer {
  const flags = containerRunFlags(
    engine.name,
    options,
    name,
    { 'axon.pool': labels.pool, 'axon.host': hostname(), 'axon.behaviour': labels.behaviour },
    [
      { host: program.entry, at: CONTAINER_ENTRY_PATH },
      { host: program.runner, at: CONTAINER_RUNNER_PATH },
      { host: dirname(launch.module), at: CONTAINER_MODULE_DIR },
    ],
    launch.mounts,
  );
  const command = ['node', CONTAINER_ENTRY_PATH];
  if (engine.linkFd !== null) command.push(`--link-fd=${engine.linkFd}`);
  // Removed by the engine once it exits: a container that goes when its link ends needs no
  // engine call of axon's (the pool removes one that did not end well too).
  const child = engine.start(['--rm', ...flags], options.image, command);
  child.once('exit', () => {
    setTimeout(() => {
      for (const stream of child.stdio) stream?.destroy();
    }, EXITED_STREAMS_MS).unref();
  });
  const stdout = child.stdout as NonNullable<typeof child.stdout>;
  const stdin = child.stdin as NonNullable<typeof child.stdin>;
  stdin.on('error', () => undefined);
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', to.onText);
  const onStray = (line: string): void => {
    to.onText(`${line}\n`);
  };
  const socket = engine.linkFd === null ? null : (child.stdio[engine.linkFd] as Socket);
  socket?.on('error', () => undefined);
  // Standard output, the link too when the engine handed over no socket.
  const out = new LineLink(stdout, stdin, { onStray });
  const link = socket ? new LineLink(socket, socket, { onStray }) : out;
  const overflow = (): void => {
    to.onViolation('a line longer than the link allows');
  };
  if (socket) {
    // With a link of its own, standard output says only how the runner died.
    out.on('message', (message: Record<string, unknown>) => {
      if (message['t'] === 'died') to.onMessage(message);
      else to.onViolation('a message on its standard output, not on its link');
    });
    link.on('message', (message: Record<string, unknown>) => {
      if (message['t'] === 'died') to.onViolation('a died line on its link');
      else to.onMessage(message);
    });
    out.on('overflow', overflow);
  } else {
    link.on('message', to.onMessage);
  }
  link.on('overflow', overflow);
  return {
    child,
    link,
    end: () => {
      (socket ?? stdin).end();
    },
  };
}
