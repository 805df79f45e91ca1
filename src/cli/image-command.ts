/**
 * @module `axon image build`: makes the local image container placement runs in
 * (`placement: 'container'`), from this host's `node` and axon's container program, with no
 * registry (see `placement/container/container-image.ts` for what it holds).
 */
import type { Command } from 'commander';
import { PoolUnavailableError } from '../errors/pool-unavailable-error.js';
import {
  CONTAINER_ENGINES,
  DEFAULT_CONTAINER_IMAGE,
  type ContainerEngineName,
} from '../placement/container/container-options.js';
import { CliError } from './cli-error.js';
import { commandAction, type CommandContext } from './command-context.js';
import { EXIT } from './exit-codes.js';
import { addJsonOption, printAnswer } from './json-output.js';

interface ImageBuildFlags {
  readonly tag: string;
  readonly engine?: string | undefined;
  readonly runtime?: string | undefined;
  readonly json?: boolean | undefined;
}

/** Adds `axon image build` to `program`. */
export function registerImageCommand(program: Command, ctx: CommandContext): void {
  const image = program
    .command('image')
    .description('The container image of container placement (see: axon image build --help)')
    .helpCommand(false);
  const build = image
    .command('build')
    .description("Make the local image container placement runs in, from this host's node")
    .option('--tag <name>', 'the image name', DEFAULT_CONTAINER_IMAGE)
    .option(
      '--engine <name>',
      `the container engine: ${CONTAINER_ENGINES.join(' or ')} (default: the one found)`,
    )
    .option('--runtime <name>', 'the OCI runtime the engine uses (runc, crun, …)');
  addJsonOption(build).addHelpText(
    'after',
    `
The image holds this host's node binary and the shared libraries it loads, /etc/passwd and
/etc/group naming the unprivileged user (65534), an empty /tmp, and axon's container program
at /opt/axon/container-entry.mjs; no shell, no package manager. Building again replaces it.

Examples:
  axon image build
  axon image build --engine podman --runtime runc --tag localhost/axon-node:test
`,
  );
  build.action(
    commandAction(ctx, build, async () => {
      const flags = build.opts<ImageBuildFlags>();
      if (
        flags.engine !== undefined &&
        !(CONTAINER_ENGINES as readonly string[]).includes(flags.engine)
      ) {
        throw new CliError(
          'USAGE',
          `--engine must be ${CONTAINER_ENGINES.join(' or ')}, got "${flags.engine}"`,
        );
      }
      const { buildContainerImage } = await import('../placement/container/container-image.js');
      let built;
      try {
        built = await buildContainerImage({
          tag: flags.tag,
          ...(flags.engine ? { engine: flags.engine as ContainerEngineName } : {}),
          ...(flags.runtime ? { runtime: flags.runtime } : {}),
        });
      } catch (err) {
        if (err instanceof PoolUnavailableError) throw new CliError('UNREACHABLE', err.message);
        throw err;
      }
      const mb = (built.bytes / 1024 / 1024).toFixed(1);
      printAnswer(
        ctx,
        flags.json,
        built,
        () =>
          `built ${built.image} with ${built.engine}: node ${built.nodeVersion}, ${built.files.length} files, ${mb} MiB\n`,
      );
      return EXIT.OK;
    }),
  );
}
