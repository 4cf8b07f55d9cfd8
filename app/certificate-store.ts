import * as fs from 'node:fs';
import * as path from 'node:path';
import { X509Certificate } from 'node:crypto';
import { TLS_FILES, WebhookCertificate, generateWebhookCertificate, webhookCertificateProblems } from '../charts';

const RENEW_BEFORE_DAYS = 30;

/**
 * Certificate material kept between synths in `dir`, so synthesizing twice gives the same manifests
 * (no Secret churn, no pod restarts in a GitOps loop). Generated when absent, invalid for the
 * Service, or within 30 days of expiry. The directory holds a private key: keep it out of git.
 */
export function loadOrCreateCertificate(dir: string, serviceName: string, namespace: string, now = new Date()): WebhookCertificate {
  const host = `${serviceName}.${namespace}.svc`;
  const existing = readMaterial(dir);
  if (existing && webhookCertificateProblems(existing, host, now).length === 0) {
    const validTo = new Date(new X509Certificate(existing.certificate).validTo).getTime();
    if (validTo - now.getTime() > RENEW_BEFORE_DAYS * 24 * 60 * 60 * 1000) return existing;
  }
  const fresh = generateWebhookCertificate({ serviceName, namespace, now });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  for (const [field, file] of Object.entries(TLS_FILES)) {
    // A new file renamed into place: an existing file's looser mode is never inherited.
    const target = path.join(dir, file);
    fs.rmSync(`${target}.tmp`, { force: true });
    fs.writeFileSync(`${target}.tmp`, fresh[field as keyof WebhookCertificate], { mode: 0o600 });
    fs.renameSync(`${target}.tmp`, target);
  }
  return fresh;
}

function readMaterial(dir: string): WebhookCertificate | undefined {
  try {
    return {
      caCertificate: fs.readFileSync(path.join(dir, TLS_FILES.caCertificate), 'utf8'),
      certificate: fs.readFileSync(path.join(dir, TLS_FILES.certificate), 'utf8'),
      privateKey: fs.readFileSync(path.join(dir, TLS_FILES.privateKey), 'utf8'),
    };
  } catch {
    return undefined;
  }
}
