import { createHash } from 'node:crypto';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { TLS_FILES } from '../webhook/config';
import { WebhookCertificate } from './certificates/webhook-certificate';

/** The `kubernetes.io/tls` Secret the webhook serves with (plus the CA, for tools that want it). */
export function webhookTlsSecret(scope: Construct, metadata: k8s.ObjectMeta, certificate: WebhookCertificate): k8s.KubeSecret {
  return new k8s.KubeSecret(scope, 'Secret', {
    metadata,
    type: 'kubernetes.io/tls',
    data: {
      [TLS_FILES.certificate]: base64(certificate.certificate),
      [TLS_FILES.privateKey]: base64(certificate.privateKey),
      [TLS_FILES.caCertificate]: base64(certificate.caCertificate),
    },
  });
}

/** The webhook configuration's `caBundle`: the CA that signed the serving certificate, base64 PEM. */
export function caBundleOf(certificate: WebhookCertificate): string {
  return base64(certificate.caCertificate);
}

/** A digest of the TLS material, as a pod annotation: new material rolls the webhook pods. */
export function tlsChecksum(certificate: WebhookCertificate): string {
  return sha256(certificate.caCertificate + certificate.certificate + certificate.privateKey);
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
