// TLS as Mozilla's intermediate profile: on TLS 1.2 only ECDHE with AES-GCM or ChaCha20-Poly1305, TLS
// 1.3 as it is, TLS 1.1 and every CBC suite refused by the server (the client offers them; the
// server's alert is what fails the handshake).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as tls from 'node:tls';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { generateWebhookCertificate } from '../../charts/engine';
import { InProcessWebhook, TEST_SERVER_NAME, startInProcess } from '../support/webhook-harness';

interface Handshake {
  readonly protocol?: string | null;
  readonly cipher?: string;
  readonly error?: string;
}

/** One handshake offering only `options`' versions and suites (SECLEVEL=0 so the client itself offers old ones). */
function handshake(port: number, ca: string, options: tls.ConnectionOptions): Promise<Handshake> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: TEST_SERVER_NAME, ...options });
    socket.once('secureConnect', () => {
      resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().standardName });
      socket.destroy();
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });
}

describe('TLS follows Mozilla\'s intermediate profile', () => {
  let webhook: InProcessWebhook;
  let ca: string;

  before(async () => {
    const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
    ca = certificate.caCertificate;
    webhook = await startInProcess({ injections: DEFAULT_INJECTIONS }, certificate);
  });

  after(async () => {
    await webhook?.stop();
  });

  for (const cipher of ['ECDHE-RSA-AES128-SHA256', 'ECDHE-RSA-AES128-SHA', 'ECDHE-RSA-AES256-SHA384', 'AES128-SHA', 'AES128-GCM-SHA256']) {
    test(`TLS 1.2 with only ${cipher} offered is refused (no shared cipher)`, async () => {
      const result = await handshake(webhook.port, ca, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2', ciphers: `${cipher}@SECLEVEL=0` });
      assert.equal(result.error, 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', `expected the server to refuse ${cipher}, got ${JSON.stringify(result)}`);
    });
  }

  test('TLS 1.1 is refused by the server', async () => {
    const result = await handshake(webhook.port, ca, { minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' });
    assert.equal(result.error, 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', `expected the server's protocol_version alert, got ${JSON.stringify(result)}`);
  });

  for (const cipher of ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305']) {
    test(`TLS 1.2 with ${cipher} is accepted`, async () => {
      const result = await handshake(webhook.port, ca, { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2', ciphers: cipher });
      assert.deepEqual(result, { protocol: 'TLSv1.2', cipher: tlsStandardName(cipher) });
    });
  }

  test('TLS 1.3 is accepted with its default suites', async () => {
    const result = await handshake(webhook.port, ca, { minVersion: 'TLSv1.3' });
    assert.equal(result.protocol, 'TLSv1.3', `got ${JSON.stringify(result)}`);
    assert.match(result.cipher ?? '', /^TLS_(AES_128_GCM_SHA256|AES_256_GCM_SHA384|CHACHA20_POLY1305_SHA256)$/);
  });
});

/** The IANA name Node reports for an OpenSSL suite name. */
function tlsStandardName(openssl: string): string {
  return {
    'ECDHE-RSA-AES128-GCM-SHA256': 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
    'ECDHE-RSA-AES256-GCM-SHA384': 'TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384',
    'ECDHE-RSA-CHACHA20-POLY1305': 'TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256',
  }[openssl]!;
}
