/**
 * `npx tsx scenarios/run.ts <name|all> [--target FILE]`: runs scenarios against a running stack (the
 * file named by --target or TASKSTACK_TARGET_FILE, else the local stack.json), printing each step and a
 * result table; exits 1 when one fails or none could run. Scenarios needing what the target lacks are skipped, with why.
 */
import { missing, nothingRan, targetOrExit } from '../contracts/target.ts';
import { reasonOf } from '../emulators/core/http.ts';
import { SCENARIOS } from './scenarios.ts';

const args = process.argv.slice(2);
const which = args[0] ?? 'all';
const chosen = which === 'all' ? SCENARIOS : SCENARIOS.filter((scenario) => scenario.name === which);
if (chosen.length === 0) {
  const names = SCENARIOS.map((scenario) => scenario.name).join(', ');
  console.error(`taskstack scenario run: no scenario ${which}; choose all or one of: ${names}`);
  process.exit(2);
}
const { file, target } = targetOrExit('scenario run', args.slice(1), process.env);
const results: [string, string, string][] = [];
for (const scenario of chosen) {
  const lacking = missing(target, scenario.needs);
  if (lacking.length) {
    results.push([scenario.name, 'SKIP', `target has no ${lacking.join(', ')}`]);
    continue;
  }
  console.log(`${scenario.name}: ${scenario.description}`);
  const began = performance.now();
  try {
    await scenario.run(target, (text) => console.log(`  ${text}`));
    results.push([scenario.name, 'PASS', `${Math.round(performance.now() - began)} ms`]);
  } catch (error) {
    results.push([scenario.name, 'FAIL', reasonOf(error)]);
  }
}
const width = Math.max(...results.map(([name]) => name.length));
for (const [name, outcome, detail] of results) console.log(`${outcome}  ${name.padEnd(width)}  ${detail}`);
const ran = results.some(([, outcome]) => outcome !== 'SKIP');
if (!ran) console.log(nothingRan(file));
process.exitCode = results.some(([, outcome]) => outcome === 'FAIL') || !ran ? 1 : 0;
