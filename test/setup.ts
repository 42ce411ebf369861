/**
 * Runs in every test file. Its afterAll is registered first, so it runs last (hooks run as a
 * stack): after the file's own hooks have stopped its nodes, their data dirs are removed. Vitest
 * ends a fork without its 'exit' event, so this is what keeps /tmp from filling up.
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from './helpers/node-process.js';

afterAll(removeTempDirs);
