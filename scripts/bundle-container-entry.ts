/**
 * @module `npm run build`'s last step: the container's program as dist/container-entry.mjs
 * (its init) and dist/container-runner.mjs (the step runner).
 */
import { bundleContainerProgram } from '../src/placement/container/container-bundle.js';

await bundleContainerProgram(new URL('../dist/', import.meta.url).pathname);
