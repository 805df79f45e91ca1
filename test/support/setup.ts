/** @module Vitest setup file, run before every test file (see `vitest.config.ts`). */
import { failOnStoppedActorWarnings } from './unexpected-errors.js';

failOnStoppedActorWarnings();
