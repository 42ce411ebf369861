// Prints the one summary line CI reads (`N passed, N failed`) from vitest's JSON report.
// Exits non-zero when any test failed, a suite failed to load, or the report is missing.
import { readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.vitest-report.json';
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log('0 passed, 1 failed');
  console.error(`test report ${file} unreadable: ${err.message}`);
  process.exit(1);
}
const passed = report.numPassedTests ?? 0;
// A suite that fails to load has no tests but is a failure all the same.
const failedSuites = (report.testResults ?? []).filter((r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0).length;
const failed = (report.numFailedTests ?? 0) + failedSuites;
const skipped = report.numPendingTests ?? 0;
// Each failure's first lines come again here, next to the summary, so that a log cut to its tail
// still names what failed and how (a seeded test's message carries its seed).
for (const suite of report.testResults ?? []) {
  const where = String(suite.name ?? '').replace(/^.*?\/test\//, 'test/');
  if (suite.status === 'failed' && (suite.assertionResults ?? []).length === 0) {
    console.log(`FAILED ${where}: ${firstLines(suite.message)}`);
  }
  for (const t of suite.assertionResults ?? []) {
    if (t.status === 'failed') console.log(`FAILED ${where} > ${t.fullName ?? t.title}: ${firstLines((t.failureMessages ?? [])[0])}`);
  }
}
// Skipped tests (per-variant cases, the opt-in screenshot) are reported before the summary line,
// which stays exactly `N passed, N failed`.
if (skipped) console.log(`${skipped} skipped`);
console.log(`${passed} passed, ${failed} failed`);
function firstLines(message) {
  return String(message ?? '').split('\n').slice(0, 3).join(' / ').slice(0, 400);
}

process.exit(failed > 0 || passed === 0 ? 1 : 0);
