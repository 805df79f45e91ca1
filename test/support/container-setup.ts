/**
 * @module Vitest globalSetup of the integration project: the container engine and image the
 * container placement tests run in. It builds `localhost/axon-node:test` (`axon image
 * build`'s image, from this host's node) once per run and names it to the test workers as
 * `AXON_TEST_IMAGE`. Without a working engine the run stops with one line saying what to
 * install: those tests are never skipped.
 */
import { findContainerEngine } from '../../src/placement/container/container-engine.js';
import { buildContainerImage } from '../../src/placement/container/container-image.js';

export const TEST_IMAGE = 'localhost/axon-node:test';

export default async function setup(): Promise<void> {
  try {
    await findContainerEngine(undefined, undefined);
  } catch (err) {
    throw new Error(
      `container placement tests need a container engine: ${(err as Error).message} (.ci/run installs podman and runc)`,
    );
  }
  await buildContainerImage({ tag: TEST_IMAGE });
  process.env['AXON_TEST_IMAGE'] = TEST_IMAGE;
}
