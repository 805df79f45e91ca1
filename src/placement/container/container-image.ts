/**
 * @module `axon image build`: the image container placement runs by default, made on this
 * host with no registry. It holds the host's own `node` binary, the shared libraries `ldd`
 * says it needs, `/etc/passwd` and `/etc/group` naming the unprivileged user, an empty `/tmp`,
 * and axon's container program (`container-entry`, its init, and `container-runner`, both
 * bundled) at `/opt/axon/` — nothing else: no shell, no package manager. The engine imports
 * it from a tarball of that root.
 */
import { execFile } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { containerProgram } from './container-bundle.js';
import { findContainerEngine } from './container-engine.js';
import { DEFAULT_CONTAINER_IMAGE, type ContainerEngineName } from './container-options.js';
import {
  CONTAINER_ENTRY_PATH,
  CONTAINER_MODULE_DIR,
  CONTAINER_RUNNER_PATH,
} from './container-wire.js';

const run = promisify(execFile);

/** Options of {@link buildContainerImage}. */
export interface BuildImageOptions {
  /** The image's name; default `localhost/axon-node:latest`. */
  readonly tag?: string;
  readonly engine?: ContainerEngineName;
  /** The OCI runtime the engine uses, as in `container.runtime`. */
  readonly runtime?: string;
  /** The `node` binary to put in it; default the one running this. */
  readonly node?: string;
}

/** What {@link buildContainerImage} made. */
export interface BuiltImage {
  readonly image: string;
  readonly engine: ContainerEngineName;
  /** The files of the image's root, by path in it. */
  readonly files: readonly string[];
  /** Their size together, in bytes. */
  readonly bytes: number;
  readonly nodeVersion: string;
}

/** The shared libraries `binary` loads, by absolute path (`ldd`). */
async function librariesOf(binary: string): Promise<string[]> {
  const { stdout } = await run('ldd', [binary]);
  const paths = new Set<string>();
  for (const line of stdout.split('\n')) {
    const match = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (match?.[1]) paths.add(match[1]);
  }
  if (paths.size === 0) throw new Error(`ldd named no libraries for ${binary}: ${stdout.trim()}`);
  return [...paths];
}

/** Makes the image (replacing one of the same name) and returns what it holds. */
export async function buildContainerImage(options: BuildImageOptions = {}): Promise<BuiltImage> {
  const image = options.tag ?? DEFAULT_CONTAINER_IMAGE;
  const node = options.node ?? process.execPath;
  const engine = await findContainerEngine(options.engine, options.runtime);
  const program = await containerProgram();
  const { stdout: version } = await run(node, ['--version']);
  const dir = await mkdtemp(join(tmpdir(), 'axon-image-'));
  const root = join(dir, 'root');
  try {
    const files = new Map<string, string>([
      ['/usr/local/bin/node', node],
      [CONTAINER_ENTRY_PATH, program.entry],
      [CONTAINER_RUNNER_PATH, program.runner],
    ]);
    for (const lib of await librariesOf(node)) files.set(lib, lib);
    let bytes = 0;
    for (const [inImage, onHost] of files) {
      const target = join(root, inImage);
      await mkdir(dirname(target), { recursive: true });
      // Links followed: the image holds the files themselves.
      await copyFile(onHost, target);
      bytes += (await stat(target)).size;
    }
    await mkdir(join(root, 'tmp'), { recursive: true });
    // Not through mkdir's mode, which the umask narrows (to 1755): the engine's tmpfs at /tmp
    // takes this folder's mode (docker copies it up), and user nobody must write there.
    await chmod(join(root, 'tmp'), 0o1777);
    await mkdir(join(root, CONTAINER_MODULE_DIR), { recursive: true });
    await mkdir(join(root, 'etc'), { recursive: true });
    await writeFile(join(root, 'etc/passwd'), 'nobody:x:65534:65534:nobody:/tmp:/nonexistent\n');
    await writeFile(join(root, 'etc/group'), 'nogroup:x:65534:\n');
    const tarball = join(dir, 'root.tar');
    await run('tar', [
      '-C',
      root,
      '--numeric-owner',
      '--owner=0',
      '--group=0',
      '-cf',
      tarball,
      '.',
    ]);
    await engine.importImage(tarball, image, [
      'ENV PATH=/usr/local/bin:/usr/bin:/bin',
      `CMD ["node", "${CONTAINER_ENTRY_PATH}"]`,
      `LABEL axon.node=${version.trim()}`,
    ]);
    return {
      image,
      engine: engine.name,
      files: [...files.keys(), '/etc/passwd', '/etc/group'],
      bytes,
      nodeVersion: version.trim(),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
