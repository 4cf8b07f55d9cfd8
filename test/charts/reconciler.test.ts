// The `reconciler` prop as synthesized: off by default (the webhook keeps no RBAC), and when on its
// Deployment, RBAC derived from its settings, settings file, and code, each valid against the
// apiserver's OpenAPI schema; bad props fail synth naming the prop.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';
import { RECONCILER_BUNDLE_FILES, RECONCILER_BUNDLE_LOADER, WebhookServer } from '../../charts/webhook-server';
import { CONFIG_MAP_MAX_BYTES } from '../../charts/webhook-server';
import { parseReconcilerSettings, podSecurityViolations, RECONCILER_SETTINGS_FILE } from '../../webhook/config';
import { SidecarInjectorPropsError } from '../../charts/sidecar-injector-props-error';
import { validateManifest } from '../support/openapi-validator';
import { ENVOY_V1, envoyInjection } from '../support/revision-fixtures';
import { type Manifest, synthChart } from '../support/synth-helpers';

const envoy = [envoyInjection(ENVOY_V1)];
const named = (manifests: readonly Manifest[], kind: string, suffix = '-reconciler') => manifests.find((object) => object.kind === kind && String(object.metadata?.name).endsWith(suffix));

describe('the reconciler prop', () => {
  test('off by default: no reconciler objects, and the webhook has no ServiceAccount, Role or token', () => {
    const { manifests } = synthChart({ injections: envoy });
    assert.deepEqual(manifests.filter((object) => /Role|ServiceAccount/.test(object.kind)).map((object) => object.kind), []);
    assert.equal(manifests.filter((object) => object.kind === 'Deployment').length, 1);
  });

  test('synthesizes a Deployment of two restricted pods, a PDB, a NetworkPolicy, and its settings, all schema-valid', () => {
    const { manifests } = synthChart({ injections: envoy, reconciler: {} });
    const deployment = named(manifests, 'Deployment')!;
    assert.equal(deployment.spec.replicas, 2);
    const template = deployment.spec.template;
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: template.metadata, spec: template.spec };
    assert.deepEqual(podSecurityViolations(pod, 'restricted'), []);
    assert.equal(template.spec.serviceAccountName, 'sidecar-injector-reconciler');
    assert.equal(template.metadata.labels['sidecar-injector.io/webhook'], 'sidecar-injector-reconciler', 'kept away from the injector');
    const container = template.spec.containers[0];
    assert.deepEqual(container.command, ['node', '--single-threaded-gc', '/app/reconciler.js'], 'the webhook image, running the reconciler, its garbage collected on its main thread alone');
    assert.deepEqual(container.env.filter((env: any) => env.valueFrom?.fieldRef).map((env: any) => [env.name, env.valueFrom.fieldRef.fieldPath]), [['POD_NAME', 'metadata.name'], ['POD_NAMESPACE', 'metadata.namespace']]);
    assert.equal(container.resources.limits.memory, '256Mi');
    assert.equal(container.env.find((env: any) => env.name === 'NODE_OPTIONS').value, '--max-old-space-size=153 --max-semi-space-size=8', 'the heap stops at 60% of the limit; the young generation is capped');
    assert.equal(named(manifests, 'PodDisruptionBudget')!.spec.maxUnavailable, 1);
    const policy = named(manifests, 'NetworkPolicy')!;
    assert.deepEqual(policy.spec.egress, [{ ports: [{ protocol: 'TCP', port: 443 }, { protocol: 'TCP', port: 6443 }] }]);
    const settings = parseReconcilerSettings(named(manifests, 'ConfigMap')!.data[RECONCILER_SETTINGS_FILE]);
    assert.deepEqual(
      { missing: settings.missing, outdated: settings.outdated, intervalSeconds: settings.intervalSeconds, repairsPerMinute: settings.repairsPerMinute, injector: settings.injector },
      { missing: 'restart', outdated: 'report', intervalSeconds: 30, repairsPerMinute: 4, injector: { backend: 'webhook', configMapName: 'sidecar-injector-config', serviceName: 'sidecar-injector', webhookConfigurationName: 'sidecar-injector.sidecar-injector' } },
    );
    assert.deepEqual(settings.excludedNamespaces, ['kube-system', 'kube-public', 'kube-node-lease', 'sidecar-injector']);
    assert.match(template.metadata.annotations['checksum/settings'], /^[0-9a-f]{64}$/);
    // The fixtures hold no OpenAPI document of rbac.authorization.k8s.io/v1 (as in overrides.test.ts):
    // its objects are checked by shape here, and by the real apiserver in e2e:node.
    for (const object of manifests) {
      if (object.apiVersion !== 'rbac.authorization.k8s.io/v1') assert.deepEqual(validateManifest(object), [], `${object.kind} ${object.metadata?.name}`);
      else if (object.kind.endsWith('Binding')) assert.deepEqual(Object.keys(object).sort(), ['apiVersion', 'kind', 'metadata', 'roleRef', 'subjects']);
      else {
        for (const rule of object.rules) {
          assert.deepEqual(Object.keys(rule).filter((key) => !['apiGroups', 'resources', 'resourceNames', 'verbs'].includes(key)), []);
          for (const key of Object.keys(rule)) assert.ok(rule[key].length > 0 && rule[key].every((value: unknown) => typeof value === 'string'), `${object.kind} rule ${key}`);
          assert.ok(rule.verbs.every((verb: string) => ['get', 'list', 'create', 'update', 'patch', 'watch'].includes(verb)), 'no delete or wildcard');
          if (rule.verbs.includes('watch')) assert.deepEqual([rule.apiGroups, rule.resources], [[''], ['pods']], 'a watch of pods only (where they changed)');
        }
      }
    }
    // The webhook itself still has no token and no RBAC of its own.
    const webhook = manifests.find((object) => object.kind === 'Deployment' && object.metadata.name === 'sidecar-injector')!;
    assert.equal(webhook.spec.template.spec.automountServiceAccountToken, false);
  });

  test('the RBAC is what the settings need: report-only can change nothing; restart adds get and patch on workloads; in-place adds pods', () => {
    const rules = (reconciler: object) => {
      const { manifests } = synthChart({ injections: envoy, reconciler });
      return { cluster: named(manifests, 'ClusterRole')!.rules, namespace: named(manifests, 'Role')!.rules };
    };
    const verbsOn = (list: any[], resource: string) => list.filter((rule) => rule.resources.includes(resource)).flatMap((rule) => rule.verbs).sort();
    const report = rules({ missing: 'report', outdated: 'report' });
    assert.deepEqual(report.cluster.flatMap((rule: any) => rule.verbs).filter((verb: string) => ['patch', 'update', 'delete', 'deletecollection', '*'].includes(verb)), ['update'], 'only its PolicyReports are updated');
    assert.deepEqual(verbsOn(report.cluster, 'pods'), ['list', 'watch'], 'watch: where pods changed since the last pass');
    assert.deepEqual(verbsOn(report.cluster, 'deployments'), []);
    const restart = rules({});
    assert.deepEqual(verbsOn(restart.cluster, 'pods'), ['create', 'list', 'watch'], 'create: the server-side dry-run probe');
    assert.deepEqual(verbsOn(restart.cluster, 'deployments'), ['get', 'patch']);
    assert.deepEqual(verbsOn(restart.cluster, 'pods/status'), []);
    const inPlace = rules({ outdated: 'in-place' });
    assert.deepEqual(verbsOn(inPlace.cluster, 'pods'), ['create', 'get', 'list', 'patch', 'watch']);
    assert.deepEqual(verbsOn(inPlace.cluster, 'pods/status'), ['patch']);
    assert.deepEqual(restart.cluster.find((rule: any) => rule.resources.includes('mutatingwebhookconfigurations')).resourceNames, ['sidecar-injector.sidecar-injector']);
    assert.ok(!restart.cluster.some((rule: any) => rule.resources.includes('secrets') || rule.resources.includes('configmaps')), 'no Secret and no ConfigMap outside its namespace');
    assert.deepEqual(restart.namespace.find((rule: any) => rule.resources.includes('configmaps')).resourceNames, ['sidecar-injector-config']);
    assert.deepEqual(rules({ policyReports: false }).cluster.filter((rule: any) => rule.apiGroups.includes('wgpolicyk8s.io')), []);
  });

  test('the image-free mode ships the reconciler bundle in its own ConfigMap, within the apiserver limit', () => {
    const { manifests } = synthChart({ injections: envoy, reconciler: {}, server: WebhookServer.fromBundle() });
    const code = manifests.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'sidecar-injector-reconciler-code')!;
    assert.ok(JSON.stringify(code).length < CONFIG_MAP_MAX_BYTES / 2, `${JSON.stringify(code).length} bytes`);
    const source = zlib.brotliDecompressSync(Buffer.from(code.binaryData[RECONCILER_BUNDLE_FILES.bundle], 'base64')).toString('utf8');
    assert.match(source, /sidecar_injector_reconciler_passes_total/);
    const container = named(manifests, 'Deployment')!.spec.template.spec.containers[0];
    assert.deepEqual(container.command, ['node', '--single-threaded-gc', '-e', RECONCILER_BUNDLE_LOADER]);
    assert.match(container.image, /^node:/);
  });

  test('with the policy backend: the policies and bindings are named in its settings and RBAC, and it gets a namespace to run in', () => {
    const { manifests } = synthChart({ injections: envoy, reconciler: {}, backend: 'admissionPolicy' });
    const settings = parseReconcilerSettings(named(manifests, 'ConfigMap')!.data[RECONCILER_SETTINGS_FILE]);
    assert.equal(settings.injector.backend, 'policy');
    const policies = manifests.filter((object) => object.kind === 'MutatingAdmissionPolicy').map((object) => object.metadata.name).sort();
    assert.ok(policies.length > 0);
    assert.deepEqual([...(settings.injector as any).policyNames].sort(), policies);
    const rule = named(manifests, 'ClusterRole')!.rules.find((candidate: any) => candidate.resources.includes('mutatingadmissionpolicies'));
    assert.deepEqual([...rule.resourceNames].sort(), policies);
    assert.ok(manifests.some((object) => object.kind === 'Namespace' && object.metadata.name === 'sidecar-injector'));
  });

  test('bad props fail synth, naming the prop and the reason', () => {
    assert.throws(
      () => synthChart({ injections: envoy, reconciler: { missing: 'delete' as any, intervalSeconds: 1, repairsPerMinute: 0.5, replicas: 0 } }),
      (error: unknown) => {
        assert.ok(error instanceof SidecarInjectorPropsError);
        assert.deepEqual(error.issues.map((issue) => issue.path), ['reconciler.missing', 'reconciler.intervalSeconds', 'reconciler.repairsPerMinute', 'reconciler.replicas']);
        assert.match(error.message, /reconciler.missing: must be one of 'report', 'restart', got "delete"/);
        assert.match(error.message, /reconciler.intervalSeconds: must be a whole number from 5 to 3600, got 1/);
        return true;
      },
    );
  });
});

describe('an injection in audit mode in the construct', () => {
  test('synthesizes into the webhook config, and on the policy backend into a ValidatingAdmissionPolicy the reconciler may read by name', () => {
    const { manifests } = synthChart({ injections: [{ ...envoyInjection(ENVOY_V1), mode: 'audit' }] });
    const config = JSON.parse(manifests.find((object) => object.kind === 'ConfigMap' && object.data?.['config.json'])!.data['config.json']);
    assert.equal(config.injections[0].mode, 'audit');
    const policyBackend = synthChart({ backend: 'admissionPolicy', reconciler: {}, injections: [{ ...envoyInjection(ENVOY_V1), mode: 'audit' }] }).manifests;
    const validating = policyBackend.filter((object) => object.kind === 'ValidatingAdmissionPolicy').map((object) => object.metadata.name);
    assert.deepEqual(validating.sort(), ['sidecar-injector.sidecar-injector-reconciler', 'sidecar-injector.sidecar-injector.pods'], 'the audit policy, and the reconciler\'s own fence');
    const settings = parseReconcilerSettings(named(policyBackend, 'ConfigMap')!.data[RECONCILER_SETTINGS_FILE]);
    assert.deepEqual((settings.injector as any).validatingPolicyNames, ['sidecar-injector.sidecar-injector.pods'], 'the injector\'s policies, not the fence');
    assert.deepEqual((settings.injector as any).validatingBindingNames.filter((name: string) => name.includes('-reconciler')), []);
    const rule = named(policyBackend, 'ClusterRole')!.rules.find((candidate: any) => candidate.resources.includes('validatingadmissionpolicies'));
    assert.deepEqual(rule.resourceNames, ['sidecar-injector.sidecar-injector.pods']);
  });
});
