/**
 * `npx tsx contracts/conformance.ts [--target FILE]`: the documented-status table against a running
 * stack — the file named by --target or TASKSTACK_TARGET_FILE, else the local stack's stack.json
 * (`npm start`, data directory TASKSTACK_DATA_DIR or .taskstack). Prints one line per row; exits 1 when
 * any row fails or none could run. Run directly, HTTPS targets with a local CA need NODE_EXTRA_CA_CERTS=<data dir>/ca/ca.pem;
 * `taskstack conformance` trusts the target's data directory's CA by itself (Target.ca, target.ts).
 */
import { elsewhere, formatTable, runTable } from './table.ts';
import { nothingRan, targetOrExit } from './target.ts';

const { file, target } = targetOrExit('conformance', process.argv.slice(2), process.env);
const results = [...(await runTable(target)), ...elsewhere()];
console.log(formatTable(results));
const count = (outcome: string) => results.filter((result) => result.outcome === outcome).length;
console.log(`${count('pass')} passed, ${count('fail')} failed, ${count('skip')} skipped (target ${file})`);
const ran = count('pass') + count('fail') > 0;
if (!ran) console.log(nothingRan(file));
process.exitCode = count('fail') > 0 || !ran ? 1 : 0;
