/** @module `npm run build`'s step for the trace UI: src/ui bundled into dist/ui/ (ui-bundle.ts). */
import { writeUiBundle } from '../src/server/ui/ui-bundle.js';

await writeUiBundle(new URL('../dist/ui', import.meta.url).pathname);
