// `cdk8s synth` / `npm run synth`: the built-in default app, written to dist/.
// SIDECAR_INJECTOR_CERT_DIR moves the certificate store (default .certs/); SIDECAR_INJECTOR_NOW
// (an ISO date) moves the clock the store decides renewals by, to rehearse a renewal.
import { DEFAULT_NAMESPACE, synthDefaultApp } from './default-app';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';
const certificateStore = process.env.SIDECAR_INJECTOR_CERT_DIR ?? '.certs';
const now = process.env.SIDECAR_INJECTOR_NOW ? new Date(process.env.SIDECAR_INJECTOR_NOW) : undefined;
if (now && Number.isNaN(now.getTime())) {
  console.error(`SIDECAR_INJECTOR_NOW=${process.env.SIDECAR_INJECTOR_NOW} is not a date (use ISO 8601, e.g. 2027-01-31T00:00:00Z)`);
  process.exit(2);
}
for (const file of synthDefaultApp({ outdir, certificateStore, now })) console.log(`wrote ${file}`);
console.log(`namespace ${DEFAULT_NAMESPACE}; certificate store ${certificateStore}/ (holds private keys: keep it out of git)`);
