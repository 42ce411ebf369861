/**
 * Writes docs/tuning.md from the settings table: every tuning knob (SettingSpec.tuning) with its
 * flag, env variable, default and help, which says what it trades. `node dist/bench/tuning-doc.js`;
 * test/cli/help.test.ts fails when the file and the table disagree.
 */
import { writeFileSync } from 'node:fs';
import { tuningDoc } from '../src/cli/setting-options.js';

writeFileSync(new URL('../../docs/tuning.md', import.meta.url), tuningDoc());
