/**
 * @module The options of container placement (`createRuntime({ container })`, `axon.yaml`'s
 * `container:`), their defaults, and their checks. Every limit is the operator's: a run or a
 * request cannot name one. The defaults isolate (no network, read-only root, small limits,
 * an unprivileged user); each is loosened only by naming it.
 */

/** The container engines axon drives (their CLIs take the same flags). */
export const CONTAINER_ENGINES = ['podman', 'docker'] as const;
export type ContainerEngineName = (typeof CONTAINER_ENGINES)[number];

/** Options of container placement. */
export interface ContainerOptions {
  /** The engine's CLI; default `podman` when found, else `docker`. */
  readonly engine?: ContainerEngineName;
  /** The OCI runtime the engine uses (`runc`, `crun`, `runsc`); default the engine's own. */
  readonly runtime?: string;
  /** The image steps run in; default `localhost/axon-node:latest` (`axon image build`). */
  readonly image?: string;
  /** Memory of each container, swap included, in MiB; default 256. */
  readonly memoryMb?: number;
  /** CPUs each container may use (fractions allowed); default 1. */
  readonly cpus?: number;
  /** Processes and threads each container may have; default 64 (Node itself uses about 11). */
  readonly pids?: number;
  /** Size of the writable `/tmp` (memory-backed, counted in `memoryMb`), in MiB; default 16. */
  readonly tmpfsMb?: number;
  /** Open files per process; default 1 024 (it must stay below the host's hard limit). */
  readonly nofile?: number;
  /** The user steps run as (`uid:gid`); default `65534:65534` (nobody). */
  readonly user?: string;
  /**
   * The container's network: default `none` (no interface but loopback). Anything else is
   * passed to the engine's `--network` as named (`slirp4netns`, `bridge`, `host`, …).
   */
  readonly network?: string;
  /** Started containers kept ready for each container agent and tool; default 0. */
  readonly warm?: number;
  /**
   * Reuse a container for its agent's next step (same agent, same mounts); default true.
   * `false`: every step starts in a container of its own, removed after it.
   */
  readonly reuse?: boolean;
  /** Containers running at once, all agents together; default 4. */
  readonly maxContainers?: number;
  /** Steps waiting for a container at most; past it a step fails with `QUEUE_FULL`. Default 256. */
  readonly maxQueue?: number;
  /** An idle container above the warm count is removed after this long; default 30 000 ms. */
  readonly idleTimeoutMs?: number;
}

/** {@link ContainerOptions} with every default applied. */
export type ResolvedContainerOptions = Required<Omit<ContainerOptions, 'engine' | 'runtime'>> &
  Pick<ContainerOptions, 'engine' | 'runtime'>;

/** The image `axon image build` makes and container placement uses by default. */
export const DEFAULT_CONTAINER_IMAGE = 'localhost/axon-node:latest';

/** Defaults of {@link ContainerOptions}. */
export const CONTAINER_DEFAULTS = {
  image: DEFAULT_CONTAINER_IMAGE,
  memoryMb: 256,
  cpus: 1,
  pids: 64,
  tmpfsMb: 16,
  nofile: 1_024,
  user: '65534:65534',
  network: 'none',
  warm: 0,
  reuse: true,
  maxContainers: 4,
  maxQueue: 256,
  idleTimeoutMs: 30_000,
} as const;

const FLAG_VALUE = /^[A-Za-z0-9][A-Za-z0-9_./:@-]{0,254}$/;

function whole(name: string, value: number, min: number): void {
  if (!(Number.isInteger(value) && value >= min)) {
    throw new RangeError(
      `container.${name} must be a whole number >= ${min}, got ${String(value)}`,
    );
  }
}

function word(name: string, value: string): void {
  if (typeof value !== 'string' || !FLAG_VALUE.test(value)) {
    throw new RangeError(
      `container.${name} must match ${FLAG_VALUE.source}, got ${JSON.stringify(value)}`,
    );
  }
}

/** `options` with defaults, checked: a `RangeError` names the first bad one. */
export function resolveContainerOptions(options: ContainerOptions = {}): ResolvedContainerOptions {
  const known = new Set([...Object.keys(CONTAINER_DEFAULTS), 'engine', 'runtime']);
  for (const key of Object.keys(options)) {
    if (!known.has(key)) {
      throw new RangeError(
        `container.${key} is not an option (known: ${[...known].sort().join(', ')})`,
      );
    }
  }
  const o = { ...CONTAINER_DEFAULTS, ...options };
  if (o.engine !== undefined && !(CONTAINER_ENGINES as readonly string[]).includes(o.engine)) {
    throw new RangeError(
      `container.engine must be one of ${CONTAINER_ENGINES.join(', ')}, got ${JSON.stringify(o.engine)}`,
    );
  }
  if (o.runtime !== undefined) word('runtime', o.runtime);
  word('image', o.image);
  word('network', o.network);
  if (!/^\d{1,10}(:\d{1,10})?$/.test(o.user)) {
    throw new RangeError(
      `container.user must be "uid" or "uid:gid", got ${JSON.stringify(o.user)}`,
    );
  }
  if (o.user === '0' || o.user.startsWith('0:')) {
    throw new RangeError('container.user must not be root (0): steps run unprivileged');
  }
  whole('memoryMb', o.memoryMb, 16);
  whole('pids', o.pids, 16);
  whole('tmpfsMb', o.tmpfsMb, 1);
  whole('nofile', o.nofile, 64);
  whole('warm', o.warm, 0);
  whole('maxContainers', o.maxContainers, 1);
  whole('maxQueue', o.maxQueue, 0);
  whole('idleTimeoutMs', o.idleTimeoutMs, 1);
  if (!(typeof o.cpus === 'number' && Number.isFinite(o.cpus) && o.cpus > 0)) {
    throw new RangeError(`container.cpus must be a number > 0, got ${String(o.cpus)}`);
  }
  if (typeof o.reuse !== 'boolean') {
    throw new RangeError(`container.reuse must be true or false, got ${JSON.stringify(o.reuse)}`);
  }
  if (o.warm > o.maxContainers) {
    throw new RangeError(
      `container.warm (${o.warm}) must not exceed container.maxContainers (${o.maxContainers})`,
    );
  }
  return o;
}

/** A host folder mounted into a container, at the same path. */
export interface ContainerMount {
  readonly path: string;
  readonly writable: boolean;
}

/**
 * The engine's `run` flags for one container: the isolation of `options`, the program and
 * module folder read-only, and `mounts` at their own paths. A path the engine's `--volume`
 * cannot carry (a `:` or `,` in it) is a `RangeError`.
 */
export function containerRunFlags(
  engine: ContainerEngineName,
  options: ResolvedContainerOptions,
  name: string,
  labels: Readonly<Record<string, string>>,
  binds: readonly { readonly host: string; readonly at: string }[],
  mounts: readonly ContainerMount[],
): string[] {
  for (const path of [...binds.map((b) => b.host), ...mounts.map((m) => m.path)]) {
    if (/[:,\n]/.test(path)) {
      throw new RangeError(`a container cannot mount ${JSON.stringify(path)}: it holds ':' or ','`);
    }
  }
  const flags = [
    '--interactive',
    // Only an image already here: a step never waits on a registry.
    '--pull=never',
    `--name=${name}`,
    ...Object.entries(labels).map(([k, v]) => `--label=${k}=${v}`),
    `--network=${options.network}`,
    '--read-only',
    // Both engines give the tmpfs the mode of the image's own /tmp, whatever `mode` says
    // (`axon image build` makes it 1777); podman's `U` also gives it to the container's user,
    // so an image whose /tmp is 755 still works there. docker has no such option.
    `--tmpfs=/tmp:rw,size=${options.tmpfsMb}m,mode=1777${engine === 'podman' ? ',U' : ''}`,
    `--memory=${options.memoryMb}m`,
    `--memory-swap=${options.memoryMb}m`,
    `--cpus=${options.cpus}`,
    `--pids-limit=${options.pids}`,
    `--ulimit=nofile=${options.nofile}:${options.nofile}`,
    `--ulimit=nproc=${options.pids * 16}:${options.pids * 16}`,
    `--user=${options.user}`,
    '--security-opt=no-new-privileges',
    '--cap-drop=all',
    '--workdir=/tmp',
    '--env=HOME=/tmp',
    ...binds.map((b) => `--volume=${b.host}:${b.at}:ro`),
    ...mounts.map((m) => `--volume=${m.path}:${m.path}:${m.writable ? 'rw' : 'ro'}`),
  ];
  return flags;
}
