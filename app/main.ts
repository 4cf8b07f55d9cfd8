// `cdk8s synth` / `npm run synth`: the built-in default app, written to dist/.
import { loadOrCreateCertificate } from './certificate-store';
import { DEFAULT_NAMESPACE, synthDefaultApp } from './default-app';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';
const certDir = process.env.SIDECAR_INJECTOR_CERT_DIR ?? '.certs';
const certificate = loadOrCreateCertificate(certDir, 'sidecar-injector', DEFAULT_NAMESPACE);
for (const file of synthDefaultApp({ outdir, certificate })) console.log(`wrote ${file}`);
