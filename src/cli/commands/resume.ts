import type { Io } from '../io.js';
import { USAGE } from '../usage.js';
import { resumeHelp, setPause } from './pause.js';

export const usage = USAGE.resume;
export const help = resumeHelp;

export function run(argv: string[], io: Io): Promise<number> {
  return setPause('resume', argv, io);
}
