// The jsii API's choices are the config's words: each enum holds exactly the values the validator accepts,
// each factory writes the JSON the config takes, each Duration the Prometheus duration the rules had.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Testing, Duration } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import * as api from '../../charts/index';
import { ADMISSION_POLICY_API_VERSIONS, INJECTOR_BACKENDS } from '../../charts/admission-policy';
import { durationText, resolveInjectionProps } from '../../charts/engine';
import {
  INJECTION_MODES,
  LOG_LEVELS,
  MISSING_ACTIONS,
  NATIVE_SIDECAR_MODES,
  NATIVE_SIDECAR_POSITIONS,
  OUTDATED_ACTIONS,
  POD_RESOURCES_POLICIES,
  POD_SECURITY_LEVELS,
  QOS_POLICIES,
  RESOURCE_OVERRIDE_FIELDS,
  TARGET_KINDS,
} from '../../webhook/config';

test('every enum holds exactly the words the config accepts', () => {
  const pairs: [string, object, readonly string[]][] = [
    ['TargetKind', api.TargetKind, TARGET_KINDS],
    ['LogLevel', api.LogLevel, LOG_LEVELS],
    ['PodSecurityLevel', api.PodSecurityLevel, POD_SECURITY_LEVELS],
    ['QosPolicy', api.QosPolicy, QOS_POLICIES],
    ['PodResourcesPolicy', api.PodResourcesPolicy, POD_RESOURCES_POLICIES],
    ['InjectionMode', api.InjectionMode, INJECTION_MODES],
    ['NativeSidecarMode', api.NativeSidecarMode, NATIVE_SIDECAR_MODES],
    ['NativeSidecarPosition', api.NativeSidecarPosition, NATIVE_SIDECAR_POSITIONS],
    ['MissingAction', api.MissingAction, MISSING_ACTIONS],
    ['OutdatedAction', api.OutdatedAction, OUTDATED_ACTIONS],
    ['ResourceOverrideField', api.ResourceOverrideField, RESOURCE_OVERRIDE_FIELDS],
    ['InjectorBackend', api.InjectorBackend, INJECTOR_BACKENDS],
    ['AdmissionPolicyApiVersion', api.AdmissionPolicyApiVersion, ADMISSION_POLICY_API_VERSIONS],
    ['FailurePolicy', api.FailurePolicy, ['Ignore', 'Fail']],
    ['LabelSelectorOperator', api.LabelSelectorOperator, ['In', 'NotIn', 'Exists', 'DoesNotExist']],
    ['MergeWhenMissing', api.MergeWhenMissing, ['skip', 'create']],
    ['ImagePullPolicy', api.ImagePullPolicy, ['Always', 'IfNotPresent', 'Never']],
  ];
  for (const [name, values, words] of pairs) assert.deepEqual(Object.values(values).sort(), [...words].sort(), name);
  for (const [name, values] of pairs) {
    for (const member of Object.keys(values)) assert.match(member, /^[A-Z][A-Z0-9_]*$/, `${name}.${member} is ALL_CAPS`);
  }
});

test('the factories write the config JSON, keys in its order, whichever order the options came in', () => {
  const injection = (trigger: api.Trigger, overrides?: api.WorkloadOverride[]) =>
    resolveInjectionProps({ overrides, containers: [{ name: 'envoy', image: 'envoy:1' }], trigger, name: 'x' } as api.InjectionProps);
  assert.deepEqual(JSON.stringify(injection(api.Trigger.always()).trigger), '{"type":"always"}');
  assert.deepEqual(JSON.stringify(injection(api.Trigger.requested()).trigger), '{"type":"requested"}');
  assert.equal(JSON.stringify(injection(api.Trigger.annotation('example.com/wait', { valuePattern: '.+' })).trigger), '{"type":"annotation","key":"example.com/wait","valuePattern":".+"}');
  const selector = api.Trigger.labelSelector({ matchExpressions: [{ values: ['a'], operator: api.LabelSelectorOperator.IN, key: 'tier' }], matchLabels: { app: 'web' } });
  assert.equal(JSON.stringify(injection(selector).trigger), '{"type":"labelSelector","matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["a"]}]}');
  assert.equal(selector.kind, 'labelSelector');
  const overrides = injection(api.Trigger.always(), [
    api.WorkloadOverride.resource({ max: '1', resource: api.ResourceOverrideField.REQUESTS_CPU, container: 'envoy', annotation: 'example.com/cpu' }),
    api.WorkloadOverride.env({ fromNamespace: true, allowedValues: ['info'], env: 'LEVEL', container: 'envoy', annotation: 'example.com/level' }),
  ]);
  assert.equal(
    JSON.stringify(overrides.overrides),
    '[{"annotation":"example.com/cpu","container":"envoy","resource":"requests.cpu","max":"1"},{"annotation":"example.com/level","container":"envoy","env":"LEVEL","allowedValues":["info"],"fromNamespace":true}]',
  );
  assert.deepEqual(Object.keys(overrides), ['name', 'trigger', 'overrides', 'containers'], 'settings in the config order, then the lists');
});

test('a monitoring Duration becomes the Prometheus duration the rules are written in', () => {
  assert.equal(durationText(Duration.minutes(5)), '5m');
  assert.equal(durationText(Duration.days(30)), '30d');
  assert.equal(durationText(Duration.minutes(90)), '1h30m');
  assert.equal(durationText(Duration.millis(1500)), '1s500ms');
  assert.equal(durationText('10m'), '10m', 'the JSON form passes through, for the validator to judge');
  assert.throws(
    () => new api.SidecarInjector(Testing.chart(), 'i', { monitoring: { alertAfter: Duration.minutes(7), rateWindow: Duration.seconds(30) } }),
    /monitoring\.rateWindow: "30s" is shorter than 1m/,
  );
});

test('InjectorErrors tells the props error apart', () => {
  const chart = Testing.chart();
  let thrown: unknown;
  try {
    new api.SidecarInjector(chart, 'i', { injections: [{ name: 'a b', trigger: api.Trigger.always(), containers: [{ name: 'c', image: 'c:1' }] }] });
  } catch (error) {
    thrown = error;
  }
  assert.ok(api.InjectorErrors.isPropsError(thrown));
  assert.equal(api.InjectorErrors.isCertificateStoreError(thrown), false);
  assert.equal(api.InjectorErrors.isPropsError(new Error('other')), false);
  assert.match(String((thrown as Error).message), /injections\[0\]\.name: /);
});

test('a struct another language put where a map may go arrives wrapped, and is unwrapped before the schema check', () => {
  const wrapped = { '$jsii.struct': { fqn: 'cdk8s-plus-27.k8s.EnvVar', data: { name: 'OTEL_SERVICE_NAME', value: '{{name}}' } } };
  const quantity = k8s.Quantity.fromString('50m');
  const resolved = resolveInjectionProps({
    name: 'otel',
    trigger: api.Trigger.always(),
    env: [wrapped],
    containers: [{ name: 'agent', image: 'agent:1', resources: { requests: { cpu: quantity } }, env: [wrapped] }],
  });
  assert.deepEqual(resolved.env, [{ name: 'OTEL_SERVICE_NAME', value: '{{name}}' }]);
  assert.deepEqual(resolved.containers, [{ name: 'agent', image: 'agent:1', resources: { requests: { cpu: '50m' } }, env: [{ name: 'OTEL_SERVICE_NAME', value: '{{name}}' }] }]);
});
