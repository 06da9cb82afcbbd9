import { afterAll } from 'vitest';
import { endFile } from './helpers/file-end.js';

// registered before the file's own hooks, so it runs after them (vitest runs after-hooks as a stack)
afterAll(endFile);
