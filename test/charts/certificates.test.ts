import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { SidecarInjectorPropsError, WebhookCertificate, webhookCertificateProblems } from '../../charts/engine';
import { buildChart } from '../support/synth-helpers';
import { testCertificate, testCertificateFor } from '../support/test-certificate';
import { serialNumber } from '../../charts/certificates/serial-number';

const SERVICE_HOST = 'sidecar-injector.sidecar-injector.svc';
const DAY_MS = 24 * 60 * 60 * 1000;
const SERVER_AUTH_OID = '1.3.6.1.5.5.7.3.1';

const material = testCertificate();
/** Material of another Service, with its own CA and key: what a mix-up brings in. */
const foreign = testCertificateFor('other', 'elsewhere');

function dnsNamesOf(certificate: X509Certificate): string[] {
  return (certificate.subjectAltName ?? '').split(', ').map((entry) => entry.replace(/^DNS:/, ''));
}

function validityDays(certificate: X509Certificate): number {
  return (Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)) / DAY_MS;
}

describe('a TLS handshake with the generated certificate', () => {
  let server: https.Server;
  let port: number;

  before(async () => {
    server = https.createServer({ cert: material.certificate, key: material.privateKey }, (_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function get(options: https.RequestOptions): Promise<number> {
    return new Promise((resolve, reject) => {
      const request = https.request({ host: '127.0.0.1', port, path: '/', method: 'GET', agent: false, ...options }, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      request.on('error', reject);
      request.end();
    });
  }

  test('succeeds for a client that trusts only the CA and asks for the Service name, as the apiserver does', async () => {
    assert.equal(await get({ ca: [material.caCertificate], servername: SERVICE_HOST }), 200);
  });

  test('fails for a client that asks for a name the certificate does not carry', async () => {
    await assert.rejects(get({ ca: [material.caCertificate], servername: 'other.example.com' }), {
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      message: /other\.example\.com/,
    });
  });

  test('fails for a client that does not trust the CA', async () => {
    const untrusted = /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN/;
    await assert.rejects(get({ servername: SERVICE_HOST }), { code: untrusted }, 'a client with only the public root CAs');
    await assert.rejects(get({ ca: [foreign.caCertificate], servername: SERVICE_HOST }), { code: untrusted }, 'a client trusting another CA');
  });
});

describe('the generated certificate', () => {
  const serving = new X509Certificate(material.certificate);
  const ca = new X509Certificate(material.caCertificate);

  test('names the Service as svc, svc.ns, svc.ns.svc and svc.ns.svc.cluster.local', () => {
    assert.deepEqual(dnsNamesOf(serving), [
      'sidecar-injector',
      'sidecar-injector.sidecar-injector',
      'sidecar-injector.sidecar-injector.svc',
      'sidecar-injector.sidecar-injector.svc.cluster.local',
    ]);
  });

  test('is for server authentication only, with an RSA 2048 key, valid for about a year', () => {
    assert.ok(serving.keyUsage?.includes(SERVER_AUTH_OID), `extKeyUsage includes serverAuth (${SERVER_AUTH_OID}), got ${serving.keyUsage}`);
    assert.equal(serving.ca, false, 'the serving certificate is not a CA');
    assert.equal(serving.publicKey.asymmetricKeyType, 'rsa');
    assert.equal(serving.publicKey.asymmetricKeyDetails?.modulusLength, 2048);
    const days = validityDays(serving);
    assert.ok(days >= 365 && days < 366, `valid for about 365 days, got ${days.toFixed(2)}`);
    assert.ok(Date.parse(serving.validFrom) <= Date.now(), `valid already, from ${serving.validFrom}`);
  });

  test('is PEM with LF line ends, as other tools write it', () => {
    for (const [field, pem] of Object.entries(material)) {
      assert.ok(!pem.includes('\r'), `${field} has no CR characters`);
      assert.match(pem, /^-----BEGIN [A-Z ]+-----\n[A-Za-z0-9+/=\n]+\n-----END [A-Z ]+-----\n$/, `${field} is one PEM block`);
    }
  });

  test('is signed by a CA valid for about ten years', () => {
    assert.equal(ca.ca, true, 'basicConstraints CA:TRUE');
    assert.ok(serving.verify(ca.publicKey), `${serving.subject} is signed by ${ca.subject}`);
    assert.equal(ca.publicKey.asymmetricKeyDetails?.modulusLength, 2048);
    const days = validityDays(ca);
    assert.ok(days >= 3650 && days < 3651, `valid for about 3650 days, got ${days.toFixed(2)}`);
  });
});

describe('webhookCertificateProblems', () => {
  test('finds nothing wrong with generated material for its own Service', () => {
    assert.deepEqual(webhookCertificateProblems(material, SERVICE_HOST), []);
  });

  test('reports a private key that does not belong to the certificate', () => {
    assert.deepEqual(webhookCertificateProblems({ ...material, privateKey: foreign.privateKey }, SERVICE_HOST), [
      'privateKey does not belong to certificate',
    ]);
  });

  test('reports a certificate that its CA did not sign', () => {
    assert.deepEqual(webhookCertificateProblems({ ...material, caCertificate: foreign.caCertificate }, SERVICE_HOST), [
      'certificate is not signed by caCertificate',
    ]);
  });

  test('reports a CA certificate that is not a CA', () => {
    const problems = webhookCertificateProblems({ ...material, caCertificate: material.certificate }, SERVICE_HOST);
    assert.ok(problems.some((problem) => /caCertificate is not a CA certificate/.test(problem)), `got ${JSON.stringify(problems)}`);
  });

  test('reports a host the certificate does not name', () => {
    assert.deepEqual(webhookCertificateProblems(material, 'other.elsewhere.svc'), [
      'certificate does not name other.elsewhere.svc in its subjectAltName',
    ]);
  });

  test('reports an expired certificate, and an expired CA', () => {
    const inTwoYears = new Date(Date.now() + 2 * 365 * DAY_MS);
    const problems = webhookCertificateProblems(material, SERVICE_HOST, inTwoYears);
    assert.equal(problems.length, 1, `only the serving certificate has expired, got ${JSON.stringify(problems)}`);
    assert.match(problems[0], /^certificate expired on /);
    const inElevenYears = new Date(Date.now() + 11 * 365 * DAY_MS);
    const later = webhookCertificateProblems(material, SERVICE_HOST, inElevenYears);
    assert.equal(later.length, 2, `both have expired, got ${JSON.stringify(later)}`);
    assert.match(later[1], /^caCertificate expired on /);
  });

  test('reports a certificate that is not valid yet', () => {
    // Brought-in material issued with a future notBefore fails every TLS handshake until then.
    const twoDaysAgo = new Date(Date.now() - 2 * DAY_MS);
    const problems = webhookCertificateProblems(material, SERVICE_HOST, twoDaysAgo);
    assert.ok(
      problems.some((problem) => /^certificate .*(not valid (yet|before)|valid from)/i.test(problem)),
      `a problem saying the certificate is not valid before ${new X509Certificate(material.certificate).validFrom}, got ${JSON.stringify(problems)}`,
    );
  });

  test('reports text that is not a PEM certificate', () => {
    assert.deepEqual(
      webhookCertificateProblems({ ...material, certificate: 'not a certificate' }, SERVICE_HOST).map((problem) => problem.split(':')[0]),
      ['certificate is not a PEM certificate'],
    );
  });
});

describe('a SidecarInjector given certificate material', () => {
  function constructionError(certificate: WebhookCertificate): SidecarInjectorPropsError {
    try {
      buildChart({ certificate });
    } catch (error) {
      assert.ok(error instanceof SidecarInjectorPropsError, `a SidecarInjectorPropsError, got ${String(error)}`);
      return error;
    }
    assert.fail('the SidecarInjector was built with bad certificate material');
  }

  test('fails, naming certificate, when the key does not belong to the certificate', () => {
    const error = constructionError({ ...material, privateKey: foreign.privateKey });
    assert.deepEqual(error.issues, [{ path: 'certificate', message: 'privateKey does not belong to certificate' }]);
    assert.match(error.message, /certificate: privateKey does not belong to certificate/);
  });

  test('fails, naming certificate and the Service host, when the material is for another Service', () => {
    const error = constructionError(foreign);
    assert.deepEqual(error.issues, [{ path: 'certificate', message: `certificate does not name ${SERVICE_HOST} in its subjectAltName` }]);
  });

  test('serves it unchanged when it is good', () => {
    assert.equal(buildChart({ certificate: material }).injector.certificate, material);
  });
});

describe('serial numbers', () => {
  test('are positive and minimally encoded in DER: never a leading 0x00 (OpenSSL refuses it, "illegal padding") nor the top bit set', () => {
    // Before, one draw in 128 began with 0x00: 10,000 draws found one every time.
    for (let i = 0; i < 10_000; i++) {
      const first = parseInt(serialNumber().slice(0, 2), 16);
      assert.ok(first > 0 && first < 0x80, `serial's first byte ${first.toString(16)}`);
    }
  });
});
