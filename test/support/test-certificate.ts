// Certificate material for tests. Generating a CA and a serving certificate costs two RSA 2048 key
// pairs (most of a second), so each distinct Service gets its material once per test process.
import { WebhookCertificate, generateWebhookCertificate } from '../../charts/certificates/webhook-certificate';

const cache = new Map<string, WebhookCertificate>();

/** Material for the Service `serviceName` in `namespace`, generated on first use in this process. */
export function testCertificateFor(serviceName: string, namespace: string): WebhookCertificate {
  const key = `${serviceName}.${namespace}`;
  let material = cache.get(key);
  if (!material) {
    material = generateWebhookCertificate({ serviceName, namespace });
    cache.set(key, material);
  }
  return material;
}

/** Material for the default app's Service: `sidecar-injector` in namespace `sidecar-injector`. */
export function testCertificate(): WebhookCertificate {
  return testCertificateFor('sidecar-injector', 'sidecar-injector');
}
