import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { assertValidManifest, validateManifest, type SchemaViolation } from '../support/openapi-validator';

const ADMISSION_REVIEWS_DIR = path.join(__dirname, '..', 'fixtures', 'admission-reviews');

function validPod(): Record<string, any> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' }, creationTimestamp: null },
    spec: {
      containers: [
        {
          name: 'web',
          image: 'nginx:1.27',
          imagePullPolicy: 'IfNotPresent',
          ports: [{ containerPort: 8080, protocol: 'TCP' }],
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: 1, memory: '128Mi' } },
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', emptyDir: {} }],
    },
  };
}

function hasViolation(violations: SchemaViolation[], pathText: string): boolean {
  return violations.some((v) => v.path === pathText);
}

test('a valid Pod has no violations, and null-valued optional fields count as unset', (t) => {
  const started = performance.now();
  assert.deepEqual(validateManifest(validPod()), []);
  const first = performance.now() - started;
  const again = performance.now();
  assert.deepEqual(validateManifest(validPod()), []);
  const subsequent = performance.now() - again;
  assertValidManifest(validPod());
  t.diagnostic(`first Pod validation ${first.toFixed(1)} ms (loads + compiles), subsequent ${subsequent.toFixed(2)} ms`);
});

const reviewFiles = fs.readdirSync(ADMISSION_REVIEWS_DIR).filter((f) => f.endsWith('.json')).sort();

test('the fixture directory of recorded AdmissionReviews is not empty', () => {
  assert.ok(reviewFiles.length > 0);
});

for (const file of reviewFiles) {
  test(`the request.object recorded by a real apiserver in ${file} is valid`, () => {
    const review = JSON.parse(fs.readFileSync(path.join(ADMISSION_REVIEWS_DIR, file), 'utf8'));
    const object = review.request.object;
    assert.ok(object, `${file} has a request.object`);
    assert.deepEqual(validateManifest(object), []);
  });
}

test('an unknown field in a container is reported with its path', () => {
  const pod = validPod();
  pod.spec.containers[0].imagee = 'nginx:typo';
  const violations = validateManifest(pod);
  assert.deepEqual(violations, [{ path: 'spec.containers[0].imagee', message: 'unknown field' }]);
  assert.throws(
    () => assertValidManifest(pod),
    (err: Error) => /Pod "web"/.test(err.message) && err.message.includes('spec.containers[0].imagee: unknown field'),
  );
});

test('an unknown top-level field and an unknown metadata field are reported', () => {
  const pod = validPod();
  pod.specc = {};
  pod.metadata.label = { app: 'web' };
  const violations = validateManifest(pod);
  assert.ok(hasViolation(violations, 'specc'), JSON.stringify(violations));
  assert.ok(hasViolation(violations, 'metadata.label'), JSON.stringify(violations));
});

test('a container without a name is reported as missing a required field', () => {
  const pod = validPod();
  delete pod.spec.containers[0].name;
  const violations = validateManifest(pod);
  assert.deepEqual(violations, [{ path: 'spec.containers[0].name', message: 'required field is missing' }]);
});

test('a required field set to null counts as missing', () => {
  const pod = validPod();
  pod.spec.containers[0].name = null;
  assert.ok(hasViolation(validateManifest(pod), 'spec.containers[0].name'));
});

test('a Secret whose data value is not base64 is rejected, and a base64 one is accepted', () => {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'creds' },
    type: 'Opaque',
    data: { password: 'c2VjcmV0', empty: '' },
    stringData: { plain: 'not base64 is fine here!' },
  };
  assert.deepEqual(validateManifest(secret), []);
  const bad = { ...secret, data: { password: 'secret!' } };
  const violations = validateManifest(bad);
  assert.equal(violations.length, 1, JSON.stringify(violations));
  assert.equal(violations[0]!.path, 'data.password');
  assert.match(violations[0]!.message, /byte/);
  assert.throws(() => assertValidManifest(bad), /Secret "creds".*\n.*data\.password/);
});

test('a Deployment with a string replica count is rejected', () => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'frontend' },
    spec: {
      replicas: 'two',
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: validPod().spec },
    },
  };
  const violations = validateManifest(deployment);
  assert.deepEqual(violations, [{ path: 'spec.replicas', message: 'must be integer' }]);
  assert.deepEqual(validateManifest({ ...deployment, spec: { ...deployment.spec, replicas: 2 } }), []);
});

test('an int-or-string field rejects a boolean and accepts integers and strings', () => {
  const pod = validPod();
  pod.spec.containers[0].readinessProbe.httpGet.port = 8080;
  assert.deepEqual(validateManifest(pod), []);
  pod.spec.containers[0].readinessProbe.httpGet.port = true;
  assert.deepEqual(validateManifest(pod), [
    { path: 'spec.containers[0].readinessProbe.httpGet.port', message: 'must be integer or string' },
  ]);
});

test('an enum field rejects a value outside the enum', () => {
  const pod = validPod();
  pod.spec.containers[0].imagePullPolicy = 'Sometimes';
  const violations = validateManifest(pod);
  assert.equal(violations.length, 1, JSON.stringify(violations));
  assert.equal(violations[0]!.path, 'spec.containers[0].imagePullPolicy');
});

test('a minimal MutatingWebhookConfiguration is valid', () => {
  assertValidManifest({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'sidecar-injector' },
    webhooks: [
      {
        name: 'sidecar-injector.example.com',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        clientConfig: {
          service: { name: 'sidecar-injector', namespace: 'sidecar-injector', path: '/mutate', port: 443 },
          caBundle: 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==',
        },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'sidecar-injection': 'enabled' } },
      },
    ],
  });
});

test('a MutatingWebhookConfiguration with a non-base64 caBundle is rejected', () => {
  const violations = validateManifest({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'sidecar-injector' },
    webhooks: [
      {
        name: 'sidecar-injector.example.com',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        clientConfig: { url: 'https://example.com/mutate', caBundle: '-----BEGIN CERTIFICATE-----' },
      },
    ],
  });
  assert.ok(hasViolation(violations, 'webhooks[0].clientConfig.caBundle'), JSON.stringify(violations));
});

test('a policy/v1 PodDisruptionBudget is valid', () => {
  assertValidManifest({
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: { name: 'web', namespace: 'shop' },
    spec: { minAvailable: '50%', selector: { matchLabels: { app: 'web' } } },
  });
});

test('a networking.k8s.io/v1 NetworkPolicy is valid', () => {
  assertValidManifest({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'allow-webhook', namespace: 'sidecar-injector' },
    spec: {
      podSelector: { matchLabels: { app: 'sidecar-injector' } },
      policyTypes: ['Ingress'],
      ingress: [{ ports: [{ protocol: 'TCP', port: 8443 }] }],
    },
  });
});

test('a kind without a known schema throws instead of passing', () => {
  assert.throws(
    () => validateManifest({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } }),
    /no Kubernetes 1\.32 OpenAPI schema known for apiVersion "example\.com\/v1", kind "Widget"/,
  );
  assert.throws(() => validateManifest({ apiVersion: 'v1', kind: 'Deployment', metadata: { name: 'd' } }), /no Kubernetes/);
});
