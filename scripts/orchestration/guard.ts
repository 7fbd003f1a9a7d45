/** CI's regression guard on orchestration speed: its shape and where its figure is committed. */
import * as path from 'node:path';
import { ROOT } from '../ramp/launch';

/** About 30 s of Steward on a 2-core machine. */
export const GUARD_SAMPLES = 800;
/** `npm run bench:orchestration -- --guard` writes it: `{ samples, stewardShare }`. */
export const GUARD_FILE = path.join(ROOT, 'bench', 'orchestration-guard.json');
/** CI fails below this fraction of the committed share. */
export const GUARD_FLOOR = 0.5;
