/**
 * Bundles the current workflows/ once for a whole `npm test` (scripts/test.sh), so that the unit
 * test files that run workflows share one bundle instead of each running webpack (see
 * testWorkflowBundle in workflow-env.ts, which reads the file from $FLOE_TEST_WORKFLOW_BUNDLE).
 *   node --import tsx test/support/write-workflow-bundle.ts <file>
 */
import { writeFileSync } from 'node:fs';
import { testWorkflowBundle } from './workflow-env';

const [file] = process.argv.slice(2);
if (!file) {
  console.error('usage: node --import tsx test/support/write-workflow-bundle.ts <file>');
  process.exit(2);
}
// Not from an earlier run's file: this is what makes one.
delete process.env.FLOE_TEST_WORKFLOW_BUNDLE;
void testWorkflowBundle().then(({ code }) => writeFileSync(file, code));
