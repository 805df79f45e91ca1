/** @module `npm run build`'s last step: the container's program as dist/container-entry.mjs. */
import { bundleContainerEntry } from '../src/placement/container/container-bundle.js';

await bundleContainerEntry(new URL('../dist/container-entry.mjs', import.meta.url).pathname);
