import { memoryStore } from '../../src/store/memory-store.js';
import { describeRunStore } from './run-store.conformance.js';

describeRunStore('memory', () => memoryStore());
