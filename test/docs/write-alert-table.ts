// `npm run docs` (after typedoc): writes docs/monitoring.md's alert table from the rules.
import * as fs from 'node:fs';
import { MONITORING_PAGE, monitoringPageWithTable } from '../support/alert-table-setups';

fs.writeFileSync(MONITORING_PAGE, monitoringPageWithTable());
console.log(`wrote the alert table of ${MONITORING_PAGE}`);
