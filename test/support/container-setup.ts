/**
 * @module Vitest globalSetup of the projects that run containers: the container engine and
 * image the container placement tests run in. The engine is the project's
 * `AXON_TEST_CONTAINER_ENGINE` (`podman` or `docker`; the `containers-on-docker` project
 * names docker), else the first of them that works; it builds `localhost/axon-node:test`
 * (`axon image build`'s image, from this host's node) in that engine once per run and names
 * it to the test workers as `AXON_TEST_IMAGE`. Without a working engine the run stops with
 * one line saying what to install: those tests are never skipped.
 */
import type { TestProject } from 'vitest/node';
import { findContainerEngine } from '../../src/placement/container/container-engine.js';
import { buildContainerImage } from '../../src/placement/container/container-image.js';
import type { ContainerEngineName } from '../../src/placement/container/container-options.js';

export const TEST_IMAGE = 'localhost/axon-node:test';

/** The engine `AXON_TEST_CONTAINER_ENGINE` names (the project's, else the process's), or none. */
function namedEngine(project: TestProject): ContainerEngineName | undefined {
  // A project without `env` has none at all (the type says otherwise).
  const env = project.config.env as Record<string, unknown> | undefined;
  const named = env?.['AXON_TEST_CONTAINER_ENGINE'] ?? process.env['AXON_TEST_CONTAINER_ENGINE'];
  if (named === undefined || named === '') return undefined;
  if (named === 'podman' || named === 'docker') return named;
  throw new Error(
    `AXON_TEST_CONTAINER_ENGINE must be podman or docker, not ${JSON.stringify(named)}`,
  );
}

export default async function setup(project: TestProject): Promise<void> {
  const named = namedEngine(project);
  let engine: ContainerEngineName;
  try {
    engine = (await findContainerEngine(named, undefined)).name;
  } catch (err) {
    const ci =
      named === 'docker'
        ? '.ci/run installs docker.io and starts dockerd'
        : '.ci/run installs podman and runc';
    throw new Error(
      `container placement tests need a container engine: ${(err as Error).message} (${ci})`,
    );
  }
  await buildContainerImage({ tag: TEST_IMAGE, engine });
  process.env['AXON_TEST_IMAGE'] = TEST_IMAGE;
}
