/**
 * @module The container engine: `podman` or `docker`, driven through its CLI (both take the
 * same flags). Chosen by `container.engine`, else the first one found that works; when none
 * does, the error says what to install. podman hands the container a socket of the host's
 * (`--preserve-fds`), so the link needs no relay; docker's containers speak on their
 * standard streams, which its daemon relays.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { PoolUnavailableError } from '../../errors/pool-unavailable-error.js';
import type { ContainerEngineName } from './container-options.js';
import { CONTAINER_LINK_FD } from './container-wire.js';

const run = promisify(execFile);

/**
 * How long a removal or a listing may take before it is given up (its CLI killed, the call
 * rejected): an engine wedged on one container — its `conmon` stopped, say — must not hold
 * a pool's close, or a step's end, for ever.
 */
export const ENGINE_CALL_TIMEOUT_MS = 10_000;

/** What a failed CLI call wrote to standard error. */
function stderrOf(err: unknown): string {
  const stderr = (err as { stderr?: unknown } | null)?.stderr;
  return typeof stderr === 'string' ? stderr : Buffer.isBuffer(stderr) ? stderr.toString() : '';
}

/** What container placement needs of an engine. */
export interface ContainerEngine {
  readonly name: ContainerEngineName;
  /**
   * The descriptor a started container has the link on, a socket straight to the host
   * (`CONTAINER_LINK_FD`, the child's `stdio[3]` on this side); `null` when the link is the
   * container's standard input and output.
   */
  readonly linkFd: number | null;
  /**
   * Starts `command` in a new container of `image` with `flags` (see `containerRunFlags`),
   * attached: the child is the engine's client, its stdio the container's (and, with a
   * {@link linkFd}, its `stdio[3]` the link).
   */
  start(flags: readonly string[], image: string, command: readonly string[]): ChildProcess;
  /** Kills and removes containers by name; names already gone are no error. */
  remove(names: readonly string[]): Promise<void>;
  /** The names of the containers (running or not) carrying `label` (`key=value`). */
  list(label: string): Promise<string[]>;
  /** True when `image` is in the engine's local store. */
  hasImage(image: string): Promise<boolean>;
  /** Imports a root filesystem tarball as `image`, with `changes` (`CMD …`, `LABEL …`). */
  importImage(tarball: string, image: string, changes: readonly string[]): Promise<void>;
}

/** The engine's CLI, with the OCI runtime where that engine takes it. */
class CliEngine implements ContainerEngine {
  readonly name: ContainerEngineName;
  readonly linkFd: number | null;
  readonly #runtime: string | undefined;

  constructor(name: ContainerEngineName, runtime: string | undefined) {
    this.name = name;
    // docker's client talks to a daemon, which cannot take a descriptor of this process.
    this.linkFd = name === 'podman' ? CONTAINER_LINK_FD : null;
    this.#runtime = runtime;
  }

  /** podman takes the runtime before the command, docker's `run` after it. */
  #global(): string[] {
    return this.name === 'podman' && this.#runtime ? [`--runtime=${this.#runtime}`] : [];
  }

  start(flags: readonly string[], image: string, command: readonly string[]): ChildProcess {
    const runtime = this.name === 'docker' && this.#runtime ? [`--runtime=${this.#runtime}`] : [];
    // The child's stdio[3], a socket pair's end, is the container's descriptor 3
    // (`CONTAINER_LINK_FD`): the first one past standard error that podman passes on.
    const link = this.linkFd === null ? [] : ['--preserve-fds=1'];
    return spawn(
      this.name,
      [...this.#global(), 'run', ...runtime, ...link, ...flags, image, ...command],
      {
        stdio: this.linkFd === null ? ['pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe', 'pipe'],
        // Not the service's working directory: podman's conmon writes a file `oom` into its
        // own when a container is killed at its memory limit. Every path given is absolute.
        cwd: tmpdir(),
      },
    );
  }

  async remove(names: readonly string[]): Promise<void> {
    if (names.length === 0) return;
    // `--time 0`: no grace; a container asked to go is killed.
    const args =
      this.name === 'podman' ? ['rm', '--force', '--ignore', '--time=0'] : ['rm', '--force'];
    try {
      await run(this.name, [...this.#global(), ...args, ...names], {
        timeout: ENGINE_CALL_TIMEOUT_MS,
      });
    } catch (err) {
      // docker has no --ignore: a name already gone is its only complaint worth dropping.
      const stderr = stderrOf(err);
      if (!/no such container/i.test(stderr)) throw err;
    }
  }

  async list(label: string): Promise<string[]> {
    const { stdout } = await run(
      this.name,
      [...this.#global(), 'ps', '--all', `--filter=label=${label}`, '--format={{.Names}}'],
      { timeout: ENGINE_CALL_TIMEOUT_MS },
    );
    return stdout.split('\n').filter((n) => n.length > 0);
  }

  async hasImage(image: string): Promise<boolean> {
    try {
      await run(this.name, [...this.#global(), 'image', 'inspect', '--format={{.Id}}', image]);
      return true;
    } catch {
      return false;
    }
  }

  async importImage(tarball: string, image: string, changes: readonly string[]): Promise<void> {
    await run(this.name, [
      ...this.#global(),
      'import',
      ...changes.map((c) => `--change=${c}`),
      tarball,
      image,
    ]);
  }
}

/** Why `name` cannot be used, or `null` when it works (a daemon reachable for docker). */
async function unusable(name: ContainerEngineName): Promise<string | null> {
  try {
    await run(
      name,
      name === 'docker'
        ? ['info', '--format={{.ID}}']
        : ['version', '--format={{.Client.Version}}'],
      {
        timeout: 15_000,
      },
    );
    return null;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT') return `\`${name}\` is not installed`;
    const stderr = stderrOf(err).trim().split('\n')[0];
    return `\`${name}\` does not work here: ${stderr || (err as Error).message}`;
  }
}

/**
 * The engine to use: `preferred` if it works, else (none named) podman or docker, whichever
 * works first. Rejects with `POOL_UNAVAILABLE` (not retriable) saying what to install.
 */
export async function findContainerEngine(
  preferred: ContainerEngineName | undefined,
  runtime: string | undefined,
): Promise<ContainerEngine> {
  const candidates: ContainerEngineName[] = preferred ? [preferred] : ['podman', 'docker'];
  const reasons: string[] = [];
  for (const name of candidates) {
    const reason = await unusable(name);
    if (reason === null) return new CliEngine(name, runtime);
    reasons.push(reason);
  }
  throw new PoolUnavailableError(
    `no container engine (${reasons.join('; ')}). Install podman (Debian: \`apt-get install -y podman runc\`) or docker, or set container.engine`,
    { retriable: false, details: { engines: candidates } },
  );
}
