// docs/monitoring.md's alert table is the one the rules write (npm run docs writes it), so it cannot
// drift from what Prometheus is given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { MONITORING_PAGE, monitoringPageWithTable } from '../support/alert-table-setups';

test('docs/monitoring.md holds the alert table the rules write (npm run docs rewrites it)', () => {
  assert.equal(fs.readFileSync(MONITORING_PAGE, 'utf8'), monitoringPageWithTable(), 'docs/monitoring.md (actual) against the table the rules write (expected)');
});
