// `cdk8s synth` / `npm run synth`: the built-in default app, written to dist/.
// SIDECAR_INJECTOR_CERT_DIR moves the certificate store (default .certs/); SIDECAR_INJECTOR_NOW
// (an ISO date) moves the clock the store decides renewals by, to rehearse a renewal.
// INJECTOR_BACKEND=admissionPolicy writes MutatingAdmissionPolicies instead of the webhook (no pods, no
// certificate); INJECTOR_POLICY_API_VERSION=v1beta1 or v1alpha1 for a 1.34/1.35 or 1.32/1.33 cluster.
import { ADMISSION_POLICY_API_VERSIONS, AdmissionPolicyApiVersion, INJECTOR_BACKENDS, InjectorBackend } from '../charts/admission-policy';
import { DEFAULT_NAMESPACE, synthDefaultApp } from './default-app';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';
const certificateStore = process.env.SIDECAR_INJECTOR_CERT_DIR ?? '.certs';
const now = process.env.SIDECAR_INJECTOR_NOW ? new Date(process.env.SIDECAR_INJECTOR_NOW) : undefined;
if (now && Number.isNaN(now.getTime())) {
  console.error(`SIDECAR_INJECTOR_NOW=${process.env.SIDECAR_INJECTOR_NOW} is not a date (use ISO 8601, e.g. 2027-01-31T00:00:00Z)`);
  process.exit(2);
}
const backend = process.env.INJECTOR_BACKEND || undefined;
if (backend !== undefined && !INJECTOR_BACKENDS.includes(backend as InjectorBackend)) {
  console.error(`INJECTOR_BACKEND=${backend} is not one of ${INJECTOR_BACKENDS.join(', ')}`);
  process.exit(2);
}
const admissionPolicyApiVersion = process.env.INJECTOR_POLICY_API_VERSION || undefined;
if (admissionPolicyApiVersion !== undefined && !ADMISSION_POLICY_API_VERSIONS.includes(admissionPolicyApiVersion as AdmissionPolicyApiVersion)) {
  console.error(`INJECTOR_POLICY_API_VERSION=${admissionPolicyApiVersion} is not one of ${ADMISSION_POLICY_API_VERSIONS.join(', ')}`);
  process.exit(2);
}
const options = { outdir, certificateStore, now, backend: backend as InjectorBackend | undefined, admissionPolicyApiVersion: admissionPolicyApiVersion as AdmissionPolicyApiVersion | undefined };
for (const file of synthDefaultApp(options)) console.log(`wrote ${file}`);
console.log(`namespace ${DEFAULT_NAMESPACE}; certificate store ${certificateStore}/ (holds private keys: keep it out of git)`);
