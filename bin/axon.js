#!/usr/bin/env node
// The axon executable. It runs the compiled CLI; `npm install` builds it (the `prepare` script).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    'axon: the build is missing; run `npm run build` (npm install runs it for you)\n',
  );
  process.exit(1);
}
await import(entry.href);
