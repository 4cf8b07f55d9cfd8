// The reconciler's admission fence: a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA
// since Kubernetes 1.30), bound with validationActions [Deny] and failurePolicy Fail, that judges the
// reconciler's ServiceAccount alone. It lets through exactly the writes webhook/reconciler/ makes and
// refuses every other create, update or delete by that ServiceAccount, naming the rule. RBAC cannot say
// "dry run only" or "these fields only": the ClusterRole grants pod creates and workload patches in
// every namespace, which in a leaked token is power over every namespace's pods. The rules follow the
// settings, as the RBAC does (report-only: nothing on pods or workloads; in-place: pod updates).

import { ApiObject, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { RECONCILER_WRITES, type ReconcilerSettings, type ResolvedInjectorConfig, annotationKeys, readinessConditionType, repairedForAnnotation, revisionConfigs } from '../webhook/config';
import type { ValidatingAdmissionPolicySpec, Variable } from './admission-policy/admission-policy-types';
import { celString, celStringList } from './admission-policy/cel-text';

/** What the fence needs of the injector's configuration to judge an in-place upgrade. */
export interface FencedSidecars {
  /** The injector's annotation prefix (its status, hashes, revision and restart annotations). */
  readonly annotationPrefix: string;
  /** `injection/container` to every image the configuration gives that container (in any revision). */
  readonly images: Readonly<Record<string, readonly string[]>>;
  /** The revisions served: an in-place upgrade may move a pod's revision annotation to one of them. */
  readonly revisions: readonly string[];
}

/** The images of every container each injection adds, over every revision. */
export function fencedSidecars(config: ResolvedInjectorConfig): FencedSidecars {
  const images = new Map<string, Set<string>>();
  for (const view of revisionConfigs(config)) {
    for (const injection of view.injections) {
      for (const container of [...(injection.containers ?? []), ...(injection.initContainers ?? [])]) {
        // An image with a placeholder differs per pod, so the pod's recorded hash never proves that only
        // images changed: such pods are restarted, never upgraded in place, and the fence needs no image.
        if (typeof container.image !== 'string' || container.image.includes('{{')) continue;
        const key = `${injection.name}/${container.name}`;
        images.set(key, (images.get(key) ?? new Set()).add(container.image));
      }
    }
  }
  return {
    annotationPrefix: config.annotationPrefix,
    images: Object.fromEntries([...images].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, set]) => [key, [...set].sort()])),
    revisions: (config.revisions ?? []).map((revision) => revision.name),
  };
}

/** Whose writes are fenced, and where its Lease lives. */
export interface FencedWriter {
  /** The reconciler's ServiceAccount's namespace (the injector's), where its Lease is. */
  readonly namespace: string;
  /** The ServiceAccount's name. */
  readonly serviceAccountName: string;
}

/** One write the reconciler makes, as the fence names it: `OPERATION group/resource[/subresource]`. */
const WRITES = {
  event: 'CREATE /events',
  pod: 'CREATE /pods',
  podUpdate: 'UPDATE /pods',
  podStatus: 'UPDATE /pods/status',
  workloads: ['UPDATE apps/deployments', 'UPDATE apps/statefulsets', 'UPDATE apps/daemonsets'],
  lease: ['CREATE coordination.k8s.io/leases', 'UPDATE coordination.k8s.io/leases'],
  report: ['CREATE wgpolicyk8s.io/policyreports', 'UPDATE wgpolicyk8s.io/policyreports'],
} as const;

/** What the apiserver itself changes in metadata on an update (not the writer's to hold equal). */
const SERVER_METADATA = ['managedFields', 'resourceVersion', 'generation'];

/** CEL: maps `a` and `b` hold the same keys and values, except `keys`. */
function sameExcept(a: string, b: string, keys: readonly string[]): string {
  const skip = celStringList(keys);
  return `${a}.all(k, k in ${skip} || (k in ${b} && ${b}[k] == ${a}[k])) && ${b}.all(k, k in ${skip} || k in ${a})`;
}

/** A variable of the policy: the map at `path` under `object` (or `oldObject`), or an empty map when absent. */
function mapVariables(name: string, path: readonly string[]): Variable[] {
  const at = (root: string) => {
    const present = path.map((_, index) => `has(${[root, ...path.slice(0, index + 1)].join('.')})`).join(' && ');
    return `${present} ? ${[root, ...path].join('.')} : {}`;
  };
  const capitalized = name[0].toUpperCase() + name.slice(1);
  return [
    { name, expression: at('object') },
    { name: `old${capitalized}`, expression: at('oldObject') },
  ];
}

/** One rule of the fence: for the writes it names, what must hold; the variables it reads. */
interface FenceRule {
  readonly name: string;
  /** What it lets the reconciler write, for the catch-all's message. */
  readonly what: string;
  readonly writes: readonly string[];
  readonly holds: readonly string[];
  readonly says: string;
  readonly variables?: readonly Variable[];
}

/** The rule as a validation: true for every other write, and for its writes when all of `holds` hold. */
const ruleValidation = (rule: FenceRule) => ({
  expression: `!(variables.write in ${celStringList(rule.writes)}) || (${rule.holds.join(' && ')})`,
  message: `${rule.name}: ${rule.says}`,
  reason: 'Forbidden',
});

/** A restart: only the pod template's restartedAt and repaired-for annotations change. */
function restartRule(prefix: string): FenceRule {
  const restartKeys = [RECONCILER_WRITES.restartedAtAnnotation, repairedForAnnotation(prefix)];
  return {
    name: 'restart-annotations-only',
    what: 'restarts of Deployments, StatefulSets and DaemonSets',
    writes: WRITES.workloads,
    holds: [
      sameExcept('object', 'oldObject', ['metadata', 'spec']),
      sameExcept('object.metadata', 'oldObject.metadata', SERVER_METADATA),
      sameExcept('object.spec', 'oldObject.spec', ['template']),
      sameExcept('object.spec.template', 'oldObject.spec.template', ['metadata']),
      sameExcept('variables.templateMetadata', 'variables.oldTemplateMetadata', ['annotations']),
      sameExcept('variables.templateAnnotations', 'variables.oldTemplateAnnotations', restartKeys),
    ],
    says: `the reconciler changes a Deployment, StatefulSet or DaemonSet only by a restart: the pod template's annotations ${restartKeys.join(' and ')}, nothing else`,
    variables: [...mapVariables('templateMetadata', ['spec', 'template', 'metadata']), ...mapVariables('templateAnnotations', ['spec', 'template', 'metadata', 'annotations'])],
  };
}

/**
 * CEL: the pod's `list` keeps its containers (by name) and all of each but its image, which changes
 * only to an image the configuration gives that container of an injection the pod carries.
 */
function sidecarImagesOnly(list: 'containers' | 'initContainers'): string {
  const key = "(n + '/' + c.name)";
  const configured = `variables.injected.exists(n, ${key} in variables.sidecarImages && c.image in variables.sidecarImages[${key}])`;
  const kept = `oldObject.spec.${list}.exists(o, o.name == c.name && ${sameExcept('c', 'o', ['image'])} && (o.image == c.image || ${configured}))`;
  const [now, before] = [`object.spec.${list}`, `oldObject.spec.${list}`];
  return `has(${now}) == has(${before}) && (!has(${now}) || (${now}.size() == ${before}.size() && ${now}.all(c, ${kept})))`;
}

/** In place: the injected containers' images (to configured ones) and the injector's annotations. */
function inPlaceRule(sidecars: FencedSidecars): FenceRule {
  const keys = annotationKeys(sidecars.annotationPrefix);
  const revision = celString(keys.revision);
  const status = celString(keys.status);
  const images = `{${Object.entries(sidecars.images).map(([key, list]) => `${celString(key)}: ${celStringList(list)}`).join(', ')}}`;
  return {
    name: 'sidecar-images-only',
    what: 'sidecar images of running pods',
    writes: [WRITES.podUpdate],
    holds: [
      sameExcept('object', 'oldObject', ['metadata', 'spec']),
      sameExcept('object.metadata', 'oldObject.metadata', [...SERVER_METADATA, 'annotations']),
      sameExcept('variables.annotations', 'variables.oldAnnotations', [keys.hashes, keys.previousImages, keys.revision]),
      `(variables.revision == variables.oldRevision || variables.revision in ${celStringList(sidecars.revisions)})`,
      sameExcept('object.spec', 'oldObject.spec', ['containers', 'initContainers']),
      sidecarImagesOnly('containers'),
      sidecarImagesOnly('initContainers'),
    ],
    says:
      `the reconciler changes a running pod only in place: the images of the containers its injections (${keys.status}) added, each to an image the configuration gives it, ` +
      `and the annotations ${keys.hashes}, ${keys.previousImages} and ${keys.revision}; nothing else`,
    variables: [
      ...mapVariables('annotations', ['metadata', 'annotations']),
      { name: 'revision', expression: `${revision} in variables.annotations ? variables.annotations[${revision}] : ''` },
      { name: 'oldRevision', expression: `${revision} in variables.oldAnnotations ? variables.oldAnnotations[${revision}] : ''` },
      // The injections the pod carries: its status annotation, as the injector wrote it.
      { name: 'injected', expression: `${status} in variables.oldAnnotations ? variables.oldAnnotations[${status}].split(',') : []` },
      // `injection/container` to the images the configuration gives it.
      { name: 'sidecarImages', expression: images },
    ],
  };
}

/** In place: the readiness gate's condition, nothing else of the pod's status. */
function readinessGateRule(prefix: string): FenceRule {
  const gate = celString(readinessConditionType(prefix));
  const others = (status: string) => `('conditions' in ${status} ? ${status}.conditions : []).filter(c, c.type != ${gate})`;
  return {
    name: 'readiness-gate-only',
    what: 'the readiness gate condition of pods',
    writes: [WRITES.podStatus],
    holds: [
      sameExcept('object', 'oldObject', ['metadata', 'status']),
      sameExcept('object.metadata', 'oldObject.metadata', SERVER_METADATA),
      sameExcept('variables.status', 'variables.oldStatus', ['conditions']),
      `${others('variables.status')} == ${others('variables.oldStatus')}`,
    ],
    says: `the reconciler writes a pod's status only to set its readiness gate's condition ${readinessConditionType(prefix)}; nothing else`,
    variables: mapVariables('status', ['status']),
  };
}

/** The rules the settings need: a write none of them names is refused by the catch-all. */
function reconcilerFenceRules(settings: ReconcilerSettings, writer: FencedWriter, sidecars: FencedSidecars): FenceRule[] {
  const component = celString(RECONCILER_WRITES.eventComponent);
  const [label, value] = Object.entries(RECONCILER_WRITES.policyReportLabels)[0];
  const rules: FenceRule[] = [
    {
      name: 'own-events-only',
      what: 'Events',
      writes: [WRITES.event],
      holds: [`has(object.reportingComponent) && object.reportingComponent == ${component}`, `has(object.source) && has(object.source.component) && object.source.component == ${component}`],
      says: `the reconciler writes Events only as ${RECONCILER_WRITES.eventComponent} (reportingComponent and source.component)`,
    },
    {
      name: 'own-lease-only',
      what: 'its Lease',
      writes: WRITES.lease,
      holds: [`has(request.namespace) && request.namespace == ${celString(writer.namespace)}`, `object.metadata.name == ${celString(settings.leaseName)}`],
      says: `the reconciler writes one Lease only: ${writer.namespace}/${settings.leaseName}`,
    },
  ];
  if (settings.policyReports) {
    rules.push({
      name: 'own-policy-reports-only',
      what: 'its PolicyReports',
      writes: WRITES.report,
      holds: [
        `object.metadata.name == ${celString(RECONCILER_WRITES.policyReportName)}`,
        `has(object.metadata.labels) && ${celString(label)} in object.metadata.labels && object.metadata.labels[${celString(label)}] == ${celString(value)}`,
      ],
      says: `the reconciler writes PolicyReports only named ${RECONCILER_WRITES.policyReportName}, labelled ${label}=${value}`,
    });
  }
  if (settings.missing !== 'report' || settings.outdated !== 'report') {
    rules.push(
      {
        name: 'dry-run-pods-only',
        what: 'dry-run pod creates',
        writes: [WRITES.pod],
        holds: ['has(request.dryRun) && request.dryRun == true'],
        says: 'the reconciler creates pods only as server-side dry runs (its injection probe: dryRun=All); this create is not a dry run',
      },
      restartRule(sidecars.annotationPrefix),
    );
  }
  if (settings.outdated === 'in-place') rules.push(inPlaceRule(sidecars), readinessGateRule(sidecars.annotationPrefix));
  return rules;
}

/** The policy's spec: matched for the ServiceAccount's every create, update and delete. */
export function reconcilerFenceSpec(settings: ReconcilerSettings, writer: FencedWriter, sidecars: FencedSidecars): ValidatingAdmissionPolicySpec {
  const rules = reconcilerFenceRules(settings, writer, sidecars);
  // First the catch-all: a write no rule names (a delete, another kind, a subresource).
  const catchAll = {
    expression: `variables.write in ${celStringList(rules.flatMap((rule) => rule.writes))}`,
    message: `no-other-writes: the reconciler creates, updates and deletes nothing but ${rules.map((rule) => rule.what).join(', ')}`,
    reason: 'Forbidden',
  };
  // The namespaces it never judges, so never writes in: kube-system's Deployments are not a token's to restart.
  const excluded = settings.excludedNamespaces;
  const excludedNamespaces = {
    expression: `!has(request.namespace) || !(request.namespace in ${celStringList(excluded)}) || (request.namespace == ${celString(writer.namespace)} && variables.write in ${celStringList(WRITES.lease)})`,
    message: `excluded-namespaces: the reconciler writes nothing in ${excluded.join(', ')}, but its Lease in ${writer.namespace}`,
    reason: 'Forbidden',
  };
  return {
    failurePolicy: 'Fail',
    matchConstraints: {
      // Every resource and subresource (the apiserver takes `*/*` alone: both, `*` would be the main ones only).
      resourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], operations: ['CREATE', 'UPDATE', 'DELETE'], scope: '*' }],
      matchPolicy: 'Equivalent',
    },
    matchConditions: [{ name: 'the-reconciler', expression: `request.userInfo.username == ${celString(`system:serviceaccount:${writer.namespace}:${writer.serviceAccountName}`)}` }],
    // Each is evaluated when a validation first reads it, which only the rule of its write does.
    variables: [
      // The write as the rules name it: `UPDATE apps/deployments`, `UPDATE /pods/status` (the apiserver
      // leaves subResource out of the request when there is none).
      {
        name: 'write',
        expression: "request.operation + ' ' + request.resource.group + '/' + request.resource.resource + (has(request.subResource) && request.subResource != '' ? '/' + request.subResource : '')",
      },
      ...rules.flatMap((rule) => rule.variables ?? []),
    ],
    validations: [catchAll, excludedNamespaces, ...rules.map(ruleValidation)],
  };
}

/** Props of ReconcilerFence. */
export interface ReconcilerFenceProps {
  /** Name of the policy and of its binding (cluster-scoped). */
  readonly name: string;
  /** Labels on both. */
  readonly labels: Record<string, string>;
  /** Whose writes are fenced. */
  readonly writer: FencedWriter;
  /** Called at synth: the reconciler's settings. */
  readonly settings: () => ReconcilerSettings;
  /** Called at synth: the injector's configured sidecars. */
  readonly sidecars: () => FencedSidecars;
}

/** The reconciler's ValidatingAdmissionPolicy and its binding (validationActions [Deny]). */
export class ReconcilerFence extends Construct {
  /** The ValidatingAdmissionPolicy: a rule per write the reconciler makes, following its settings. */
  readonly policy: ApiObject;
  /** Its ValidatingAdmissionPolicyBinding: Deny, for every object the policy matches. */
  readonly binding: ApiObject;

  constructor(scope: Construct, id: string, props: ReconcilerFenceProps) {
    super(scope, id);
    this.policy = new ApiObject(this, 'Policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: props.name, labels: props.labels },
      spec: Lazy.any({ produce: () => reconcilerFenceSpec(props.settings(), props.writer, props.sidecars()) }),
    });
    this.binding = new ApiObject(this, 'Binding', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: props.name, labels: props.labels },
      spec: { policyName: props.name, validationActions: ['Deny'] },
    });
  }
}
