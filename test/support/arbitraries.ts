// fast-check arbitraries for the engine's property tests: admission requests made from the recorded
// AdmissionReviews with their pods randomized, and injector configs that `resolveInjectorConfig`
// accepts. Names, keys and paths are drawn from small shared pools so that pods and configs collide
// (same container names, label keys, mount paths) as often as real clusters make them.

import fc from 'fast-check';
import {
  DEFAULT_ANNOTATION_PREFIX,
  InjectorConfig,
  JsonObject,
  NATIVE_SIDECAR_MODES,
  NATIVE_SIDECAR_POSITIONS,
  ResolvedInjectorConfig,
  TARGET_KINDS,
  TargetKind,
  annotationKeys,
  injectorConfigIssues,
  resolveInjectorConfig,
} from '../../webhook/config';
import type { AdmissionRequest } from '../../webhook/engine';
import { loadReview, podOf, reviewNames } from './recorded-reviews';
import { aggregateLimits, aggregateRequests, withContainerDefaults } from './pod-level-resources';

type Json = Record<string, any>;

// ---------------------------------------------------------------------------------------------
// Shared pools

export const ANNOTATION_PREFIXES = [DEFAULT_ANNOTATION_PREFIX, 'mesh.example.com'] as const;

/** The containers and init containers of the recordings, which merges name. */
export const RECORDED_CONTAINER_NAMES = [
  'nightly', 'agent', 'nginx', 'batch-once', 'demoapp', 'dryrun', 'sleep', 'helper', 'setup', 'worker', 'log-shipper', 'pg',
] as const;
/** Names of the containers the injections add; some are also in the recordings or added to the pods. */
export const CONTAINER_NAMES = ['envoy', 'proxy', 'logger', 'istio-init', 'app', 'agent', 'helper'] as const;
export const VOLUME_NAMES = ['data', 'proxy-config', 'logs', 'nginx-conf', 'tmp', 'certs'] as const;
export const ENV_NAMES = ['LOG_LEVEL', 'PROXY_PORT', 'POD_NAME', 'HTTP_PROXY', 'MESH_ID', 'TZ'] as const;
export const MOUNT_PATHS = ['/etc/proxy', '/data', '/var/log', '/tmp', '/etc/nginx', '/var/run/secrets/mesh'] as const;
/** Label keys; 'constructor' is a valid key that is also a member of every JavaScript object. */
export const LABEL_KEYS = ['app', 'tier', 'mesh', 'example.com/team', 'version', 'constructor'] as const;
export const LABEL_VALUES = ['on', 'off', 'web', 'v1', 'backend', ''] as const;
/** Annotation keys that triggers read and injections set (never the injector's own inject/status). */
export const ANNOTATION_KEYS = ['example.com/owner', 'trigger.example.com/proxy', 'com.foreach/wait-for-it', 'example.com/config'] as const;
export const ANNOTATION_VALUES = ['true', 'on', 'yes', 'db:5432', 'false', ''] as const;
const IMAGES = ['busybox:1.36', 'envoyproxy/envoy:v1.30.1', 'nginx:1.25', 'registry.example.com/team/agent@sha256:' + 'a'.repeat(64)];

/** The securityContext that Pod Security "restricted" requires of every container. */
export const RESTRICTED_SECURITY_CONTEXT: JsonObject = {
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

const dnsLabel = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);
const pick = <T>(pool: readonly T[]) => fc.constantFrom(...pool);
const pooledOr = <T>(pool: readonly T[], other: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: pick(pool) }, { weight: 1, arbitrary: other });
/** `arbitrary` one time in `1 + weightOfNothing`, else undefined. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, weightOfNothing: number) =>
  fc.oneof({ weight: weightOfNothing, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });

export const containerName = pooledOr(CONTAINER_NAMES, dnsLabel);
/** Names of the containers added to the recorded pods; 'envoy' and 'app' are also injected. */
export const userContainerName = pooledOr(['app', 'web', 'envoy', 'cache'], dnsLabel);
export const volumeName = pooledOr(VOLUME_NAMES, dnsLabel);
export const envName = pooledOr(ENV_NAMES, fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/));
export const mountPath = pooledOr(MOUNT_PATHS, dnsLabel.map((name) => `/mnt/${name}`));
export const labelKey = pooledOr(LABEL_KEYS, dnsLabel);
export const labelValue = fc.oneof({ weight: 6, arbitrary: pick(LABEL_VALUES) }, { weight: 1, arbitrary: dnsLabel });
export const annotationKey = pooledOr(ANNOTATION_KEYS, dnsLabel.map((name) => `example.com/${name}`));
export const annotationValue = pooledOr(ANNOTATION_VALUES, fc.string({ maxLength: 12 }));

const envVar = fc.oneof(
  fc.record({ name: envName, value: fc.string({ maxLength: 12 }) }),
  envName.map((name) => ({ name, valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } })),
);
const envList = (maxLength = 3) => fc.uniqueArray(envVar, { selector: (variable) => variable.name, maxLength });
const volumeMount = fc.record({ name: volumeName, mountPath, readOnly: fc.boolean() });
const volumeMountList = (maxLength = 2) => fc.uniqueArray(volumeMount, { selector: (mount) => mount.mountPath, maxLength });
const volume = fc.oneof(
  volumeName.map((name) => ({ name, emptyDir: {} })),
  fc.record({ name: volumeName, configMap: fc.record({ name: dnsLabel }) }),
);

// ---------------------------------------------------------------------------------------------
// Pods and workloads

/** Drops empty lists, as a pod author would not write them. */
function compact<T extends Json>(container: T): T {
  return Object.fromEntries(Object.entries(container).filter(([, value]) => !(Array.isArray(value) && value.length === 0))) as T;
}

/** A container of the user's own, as a pod author writes it. */
export const userContainer = fc
  .record(
    {
      name: userContainerName,
      image: pick(IMAGES),
      command: fc.array(fc.string({ maxLength: 8 }), { maxLength: 2 }),
      env: envList(),
      volumeMounts: volumeMountList(),
      ports: fc.uniqueArray(fc.integer({ min: 1, max: 65535 }), { maxLength: 2 }).map((ports) => ports.map((containerPort) => ({ containerPort }))),
      readinessProbe: fc.record({ httpGet: fc.record({ path: fc.constant('/ready'), port: fc.integer({ min: 1, max: 65535 }) }) }),
      // The last makes the container Guaranteed-shaped (requests default to limits), so some pods are Guaranteed.
      resources: fc.constantFrom({}, { limits: { cpu: '500m' } }, { limits: { cpu: '500m', memory: '128Mi' } }),
    },
    { requiredKeys: ['name', 'image'] },
  )
  .map(compact);

/** An init container of the user's own; `restartPolicy: Always` makes a native sidecar. */
export const userInitContainer = fc
  .tuple(userContainer, fc.boolean())
  .map(([container, sidecar]) => {
    // Only sidecars may carry probes.
    const { readinessProbe: _probe, ...rest } = container;
    return sidecar ? { ...container, restartPolicy: 'Always' } : rest;
  });

export interface PodRandomization {
  readonly extraContainers: readonly { position: number; container: Json }[];
  readonly extraInitContainers: readonly { position: number; container: Json }[];
  /** Appended to the env of the existing container at `index` (modulo their count). */
  readonly extraEnv: readonly { index: number; env: Json[] }[];
  readonly extraVolumes: readonly Json[];
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  /** For workloads: the object's own metadata, which triggers read too. */
  readonly objectLabels: Record<string, string>;
  readonly objectAnnotations: Record<string, string>;
  /** `<prefix>/inject`, on the pod template; undefined leaves the recording's. */
  readonly inject: string | undefined;
  readonly status: string | undefined;
  /** Pod-level resources (`spec.resources`, Kubernetes 1.34+), set valid for the pod's own containers; undefined sets none. */
  readonly podResources?: PodLevelShape;
}

/** Which pod-level figures a pod sets, and how much room each leaves above what its containers need (0: none). */
export interface PodLevelShape {
  readonly requests: readonly ('cpu' | 'memory')[];
  readonly limits: readonly ('cpu' | 'memory')[];
  /** In steps of 100m of cpu or 32Mi of memory. */
  readonly roomRequests: number;
  readonly roomLimits: number;
}

export const podLevelShape: fc.Arbitrary<PodLevelShape> = fc
  .record({
    requests: fc.subarray(['cpu', 'memory'] as const),
    limits: fc.subarray(['cpu', 'memory'] as const),
    roomRequests: fc.nat({ max: 3 }),
    roomLimits: fc.nat({ max: 3 }),
  })
  .filter((shape) => shape.requests.length + shape.limits.length > 0);

const ROOM_STEP: Record<'cpu' | 'memory', bigint> = { cpu: 100_000_000n, memory: 32n * 1024n * 1024n * 1_000_000_000n };
/** Nano-units as a pod author writes them: millicores, bytes (rounded up). */
const authored = (name: 'cpu' | 'memory', nanos: bigint) => (name === 'cpu' ? `${(nanos + 999_999n) / 1_000_000n}m` : `${(nanos + 999_999_999n) / 1_000_000_000n}`);

/** `spec.resources` of the shape, the least the apiserver accepts for the pod's own containers plus the room. */
export function podLevelResourcesFor(spec: Json, shape: PodLevelShape): Json {
  const defaulted = withContainerDefaults(spec);
  const requested = aggregateRequests(defaulted);
  const limited = aggregateLimits(defaulted);
  const resources: Json = {};
  for (const name of shape.requests) (resources.requests ??= {})[name] = authored(name, (requested.get(name) ?? 0n) + BigInt(shape.roomRequests) * ROOM_STEP[name]);
  for (const name of shape.limits) {
    // At least the pod-level request (or the sum it defaults to) and every container's limit.
    let least = shape.requests.includes(name) ? (requested.get(name) ?? 0n) + BigInt(shape.roomRequests) * ROOM_STEP[name] : (requested.get(name) ?? 0n);
    if ((limited.get(name) ?? 0n) > least) least = limited.get(name)!;
    (resources.limits ??= {})[name] = authored(name, least + BigInt(shape.roomLimits) * ROOM_STEP[name]);
  }
  return resources;
}

export interface ScenarioRequest {
  /** The recorded review the request was made from. */
  readonly review: string;
  readonly request: AdmissionRequest & { object: Json; oldObject?: Json | null };
}

const recorded = new Map<string, Json>();
function recordedRequest(name: string): Json {
  let request = recorded.get(name);
  if (!request) {
    if (name === 'replicaset-create-frontend') {
      // No ReplicaSet was recorded: one made from the Deployment, with only the fields a ReplicaSet has.
      const deployment = loadReview('deployment-create-frontend').request;
      const { replicas, selector, template, minReadySeconds } = deployment.object.spec;
      const { status: _deploymentStatus, ...object } = deployment.object;
      request = {
        ...deployment,
        kind: { group: 'apps', version: 'v1', kind: 'ReplicaSet' },
        requestKind: { group: 'apps', version: 'v1', kind: 'ReplicaSet' },
        resource: { group: 'apps', version: 'v1', resource: 'replicasets' },
        requestResource: { group: 'apps', version: 'v1', resource: 'replicasets' },
        object: {
          ...object,
          kind: 'ReplicaSet',
          spec: minReadySeconds === undefined ? { replicas, selector, template } : { replicas, selector, template, minReadySeconds },
        },
      };
    } else {
      request = loadReview(name).request;
    }
    recorded.set(name, request!);
  }
  return structuredClone(request!);
}

export const RECORDED_REQUESTS = [...reviewNames(), 'replicaset-create-frontend'];

function injectValue(injectionNames: readonly string[]): fc.Arbitrary<string> {
  const names = injectionNames.length > 0 ? [...injectionNames, 'x', 'true'] : ['x', 'true'];
  return fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom('false', 'False', ' false ', 'true') },
    { weight: 3, arbitrary: fc.uniqueArray(pick(names), { minLength: 1, maxLength: 3 }).map((list) => list.join(',')) },
    { weight: 1, arbitrary: fc.uniqueArray(pick(names), { minLength: 1, maxLength: 3 }).map((list) => list.join(' , ')) },
  );
}

const stringDict = (key: fc.Arbitrary<string>, value: fc.Arbitrary<string>, maxKeys = 3) => fc.dictionary(key, value, { maxKeys });

function podRandomization(injectionNames: readonly string[], podLevel: 'sometimes' | 'always'): fc.Arbitrary<PodRandomization> {
  return fc.record({
    extraContainers: fc.array(fc.record({ position: fc.nat(), container: userContainer }), { maxLength: 2 }),
    extraInitContainers: fc.array(fc.record({ position: fc.nat(), container: userInitContainer }), { maxLength: 2 }),
    extraEnv: fc.array(fc.record({ index: fc.nat(), env: envList(2) }), { maxLength: 2 }),
    extraVolumes: fc.array(volume, { maxLength: 2 }),
    labels: stringDict(labelKey, labelValue),
    annotations: stringDict(annotationKey, annotationValue),
    objectLabels: stringDict(labelKey, labelValue, 2),
    objectAnnotations: stringDict(annotationKey, annotationValue, 2),
    inject: sometimes(injectValue(injectionNames), 1),
    status: sometimes(
      fc.uniqueArray(pick(injectionNames.length > 0 ? injectionNames : ['x']), { minLength: 1, maxLength: 2 }).map((list) => list.join(',')),
      6,
    ),
    podResources: podLevel === 'always' ? podLevelShape : sometimes(podLevelShape, 4),
  });
}

function namesIn(list: unknown): Set<string> {
  return new Set(Array.isArray(list) ? list.map((item) => item?.name).filter((name) => typeof name === 'string') : []);
}

/** Applies a randomization to a fresh copy of a recorded request's object. */
export function randomizedRequest(review: string, prefix: string, randomization: PodRandomization, uid: string): ScenarioRequest {
  const request = recordedRequest(review);
  request.uid = uid;
  const object = request.object;
  const pod = podOf(object);
  const spec = pod.spec;
  const keys = annotationKeys(prefix);

  const taken = new Set([...namesIn(spec.containers), ...namesIn(spec.initContainers)]);
  for (const { position, container } of randomization.extraContainers) {
    if (taken.has(container.name)) continue;
    taken.add(container.name);
    spec.containers.splice(position % (spec.containers.length + 1), 0, structuredClone(container));
  }
  for (const { position, container } of randomization.extraInitContainers) {
    if (taken.has(container.name)) continue;
    taken.add(container.name);
    spec.initContainers ??= [];
    spec.initContainers.splice(position % (spec.initContainers.length + 1), 0, structuredClone(container));
  }
  for (const { index, env } of randomization.extraEnv) {
    const container = spec.containers[index % spec.containers.length];
    const existing = namesIn(container.env);
    const added = env.filter((variable) => !existing.has(variable.name));
    if (added.length > 0) container.env = [...(container.env ?? []), ...structuredClone(added)];
  }
  const volumes = namesIn(spec.volumes);
  for (const item of randomization.extraVolumes) {
    if (volumes.has(item.name)) continue;
    volumes.add(item.name);
    spec.volumes = [...(spec.volumes ?? []), structuredClone(item)];
  }
  pod.metadata ??= {};
  const addMap = (target: Json, field: 'labels' | 'annotations', entries: Record<string, string>) => {
    if (Object.keys(entries).length > 0) target[field] = { ...(target[field] ?? {}), ...entries };
  };
  addMap(pod.metadata, 'labels', randomization.labels);
  addMap(pod.metadata, 'annotations', randomization.annotations);
  if (pod !== object) {
    addMap(object.metadata, 'labels', randomization.objectLabels);
    addMap(object.metadata, 'annotations', randomization.objectAnnotations);
  }
  if (randomization.inject !== undefined) addMap(pod.metadata, 'annotations', { [keys.inject]: randomization.inject });
  if (randomization.status !== undefined) addMap(pod.metadata, 'annotations', { [keys.status]: randomization.status });
  if (randomization.podResources !== undefined) spec.resources = podLevelResourcesFor(spec, randomization.podResources);
  return { review, request: JSON.parse(JSON.stringify(request)) as ScenarioRequest['request'] };
}

/** A request made from one of the recordings (and a ReplicaSet made from the Deployment), its pod randomized. */
export function arbitraryRequest(prefix: string, injectionNames: readonly string[] = [], podLevel: 'sometimes' | 'always' = 'sometimes'): fc.Arbitrary<ScenarioRequest> {
  return fc
    .record({
      review: pick(RECORDED_REQUESTS),
      prefixOverride: sometimes(pick(ANNOTATION_PREFIXES), 8),
      randomization: podRandomization(injectionNames, podLevel),
      uid: fc.uuid(),
    })
    .map(({ review, prefixOverride, randomization, uid }) => randomizedRequest(review, prefixOverride ?? prefix, randomization, uid));
}

// ---------------------------------------------------------------------------------------------
// Configs

export const MERGE_FIELDS: readonly JsonObject[] = [
  { readinessProbe: { initialDelaySeconds: 10 } },
  { readinessProbe: { periodSeconds: 5 } },
  { readinessProbe: { initialDelaySeconds: 20, failureThreshold: 3 } },
  { resources: { limits: { cpu: '100m' } } },
  { resources: { requests: { memory: '64Mi' } } },
  { securityContext: { readOnlyRootFilesystem: true } },
  { terminationMessagePolicy: 'FallbackToLogsOnError' },
  { imagePullPolicy: 'Always' },
];

const merge = fc.record(
  {
    containerNames: fc.uniqueArray(pick([...RECORDED_CONTAINER_NAMES, ...CONTAINER_NAMES]), { minLength: 1, maxLength: 4 }),
    fields: pick(MERGE_FIELDS),
    whenMissing: fc.constantFrom('skip', 'create'),
  },
  { requiredKeys: ['containerNames', 'fields'] },
);

const trigger = fc.oneof(
  fc.constant({ type: 'always' as const }),
  fc.constant({ type: 'requested' as const }),
  fc.record(
    { type: fc.constant('annotation' as const), key: pick(ANNOTATION_KEYS), valuePattern: fc.constantFrom('true', 'on|yes', '[a-z]+', '.*', '[^:]+:[0-9]+') },
    { requiredKeys: ['type', 'key'] },
  ),
  fc.record({
    type: fc.constant('labelSelector' as const),
    matchLabels: fc.dictionary(pick(LABEL_KEYS), pick(LABEL_VALUES), { minKeys: 1, maxKeys: 2 }),
  }),
  fc.record({
    type: fc.constant('labelSelector' as const),
    matchExpressions: fc.array(
      fc.oneof(
        fc.record({ key: pick(LABEL_KEYS), operator: fc.constantFrom('In' as const, 'NotIn' as const), values: fc.uniqueArray(pick(LABEL_VALUES), { minLength: 1, maxLength: 2 }) }),
        fc.record({ key: pick(LABEL_KEYS), operator: fc.constantFrom('Exists' as const, 'DoesNotExist' as const) }),
      ),
      { minLength: 1, maxLength: 2 },
    ),
  }),
);

/** Strings for injected values; which placeholders are allowed depends on the trigger. */
function templatedString(annotationTrigger: boolean): fc.Arbitrary<string> {
  const templates = ['--cluster={{namespace}}', '--pod={{ name }}', 'plain', '--listen=:15001'];
  if (annotationTrigger) templates.push('--wait={{annotation}}', '{{annotation}}');
  return fc.oneof(pick(templates), fc.string({ maxLength: 10 }).filter((text) => !text.includes('{{')));
}

const restrictedSecurityContext = fc
  .record({ runAsUser: fc.integer({ min: 1, max: 65534 }), readOnlyRootFilesystem: fc.boolean() }, { requiredKeys: [] })
  .map((extra) => ({ ...RESTRICTED_SECURITY_CONTEXT, ...extra }));
const anySecurityContext = fc.oneof(
  fc.constant({ privileged: true }),
  fc.constant({ runAsUser: 0 }),
  fc.constant({ capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } }),
  restrictedSecurityContext,
);

function injectedContainer(annotationTrigger: boolean, restricted: boolean, init: boolean) {
  return fc
    .record(
      {
        name: containerName,
        image: pick(IMAGES),
        args: fc.array(templatedString(annotationTrigger), { maxLength: 3 }),
        env: fc.uniqueArray(
          fc.record({ name: envName, value: templatedString(annotationTrigger) }),
          { selector: (variable) => variable.name, maxLength: 2 },
        ),
        volumeMounts: volumeMountList(1),
        ports: fc.constant([{ containerPort: 15001, name: 'proxy' }]),
        resources: fc.constantFrom(
          { requests: { cpu: '100m', memory: '64Mi' } },
          { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '128Mi' } },
          { limits: { cpu: '200m', memory: '128Mi' } },
          { requests: { cpu: '50m' } },
        ),
        securityContext: restricted ? restrictedSecurityContext : anySecurityContext,
        sidecar: fc.boolean(),
      },
      { requiredKeys: restricted ? ['name', 'image', 'securityContext', 'sidecar'] : ['name', 'image', 'sidecar'] },
    )
    .map(({ sidecar, ...container }) => compact(init && sidecar ? { ...container, restartPolicy: 'Always' } : container));
}

export interface ConfigOptions {
  /** Every injected container and init container carries the restricted securityContext. */
  readonly restricted?: boolean;
  /**
   * Only add containers, init containers, volumes and pull secrets: nothing that lands in the user's
   * containers or the metadata, so injections cannot act on one another.
   */
  readonly containersOnly?: boolean;
  readonly maxInjections?: number;
  /**
   * Also make injections that act on one another, as real configs do: one adds the label or annotation
   * another's trigger reads, merges into a container another adds, or merges into the same container.
   * @default true unless containersOnly
   */
  readonly interactions?: boolean;
  /** Every pod sets pod-level resources (else one in five does). */
  readonly podLevelResources?: boolean;
}

export const INTERACTIONS = ['label-selects', 'annotation-triggers', 'merge-into-injected', 'overlapping-merges', 'env-for-injected'] as const;

/** Rewrites injections `from` and `to` (from < to) so that `from`'s changes matter to `to`. */
function interact(injections: Json[], kind: (typeof INTERACTIONS)[number], first: number, second: number): Json[] {
  const n = injections.length;
  if (n < 2) return injections;
  let from = first % n;
  let to = second % n;
  if (from === to) to = (from + 1) % n;
  if (from > to) [from, to] = [to, from];
  // Retargeting a trigger: {{annotation}} only has a value under an annotation trigger.
  const retrigger = (injection: Json, trigger: Json): Json => {
    const text = trigger.type === 'annotation' ? JSON.stringify(injection) : JSON.stringify(injection).replaceAll('{{annotation}}', '{{namespace}}');
    return { ...JSON.parse(text), trigger, targetKinds: [...TARGET_KINDS] };
  };
  const out = [...injections];
  const allKinds = (injection: Json) => ({ ...injection, targetKinds: [...TARGET_KINDS] });
  switch (kind) {
    case 'label-selects':
      out[from] = retrigger({ ...out[from], labels: { ...out[from].labels, mesh: 'on' } }, { type: 'always' });
      out[to] = retrigger(out[to], { type: 'labelSelector', matchLabels: { mesh: 'on' } });
      break;
    case 'annotation-triggers':
      out[from] = retrigger({ ...out[from], annotations: { ...out[from].annotations, 'trigger.example.com/proxy': 'on' } }, { type: 'always' });
      out[to] = retrigger(out[to], { type: 'annotation', key: 'trigger.example.com/proxy' });
      break;
    case 'merge-into-injected': {
      const added = [...(out[from].containers ?? []), ...(out[from].initContainers ?? [])].map((container: Json) => container.name);
      if (added.length === 0) return injections;
      out[from] = allKinds(out[from]);
      out[to] = allKinds({
        ...out[to],
        merges: [...(out[to].merges ?? []), { containerNames: added, fields: { readinessProbe: { periodSeconds: 5 } }, whenMissing: 'create' }],
      });
      break;
    }
    case 'env-for-injected': {
      // `to` only sets an env var `from` already set in the user's containers, but not in `from`'s own container.
      const containers = out[from].containers?.length ? out[from].containers : [{ name: 'mesh-proxy', image: IMAGES[1], securityContext: RESTRICTED_SECURITY_CONTEXT }];
      const env = [...(out[from].env ?? []).filter((variable: Json) => variable.name !== 'MESH_ID'), { name: 'MESH_ID', value: 'a' }];
      out[from] = retrigger({ ...out[from], containers, env }, { type: 'always' });
      out[to] = { name: out[to].name, trigger: { type: 'always' }, targetKinds: [...TARGET_KINDS], env: [{ name: 'MESH_ID', value: 'b' }] };
      break;
    }
    case 'overlapping-merges': {
      const everyContainer = [...RECORDED_CONTAINER_NAMES];
      const fields: JsonObject[] = [{ readinessProbe: { initialDelaySeconds: 10 } }, { readinessProbe: { periodSeconds: 5 } }];
      [from, to].forEach((index, which) => {
        out[index] = allKinds({
          ...out[index],
          merges: [...(out[index].merges ?? []), { containerNames: everyContainer, fields: fields[which], whenMissing: 'create' }],
        });
      });
      break;
    }
  }
  return out;
}

function injection(options: ConfigOptions) {
  const restricted = options.restricted ?? false;
  return trigger.chain((chosen) => {
    const annotationTrigger = chosen.type === 'annotation';
    const metadata = options.containersOnly ? fc.constant(undefined) : sometimes(stringDict(labelKey, fc.oneof(labelValue, fc.constant('{{name}}')), 2), 1);
    return fc.record(
      {
        name: pooledOr(['envoy', 'istio-proxy', 'logger', 'vault-agent', 'probe-defaults', 'wait-for-it'], dnsLabel),
        trigger: fc.constant(chosen),
        targetKinds: fc.oneof(
          { weight: 2, arbitrary: fc.constant(TARGET_KINDS as readonly TargetKind[]) },
          { weight: 1, arbitrary: fc.shuffledSubarray([...TARGET_KINDS], { minLength: 1 }) },
        ),
        containers: fc.uniqueArray(injectedContainer(annotationTrigger, restricted, false), { selector: (c) => c.name, maxLength: 2 }),
        initContainers: fc.uniqueArray(injectedContainer(annotationTrigger, restricted, true), { selector: (c) => c.name, maxLength: 2 }),
        volumes: fc.uniqueArray(volume, { selector: (v) => v.name, maxLength: 2 }),
        volumeMounts: options.containersOnly ? fc.constant(undefined) : volumeMountList(2),
        env: options.containersOnly
          ? fc.constant(undefined)
          : fc.uniqueArray(fc.record({ name: envName, value: templatedString(annotationTrigger) }), { selector: (v) => v.name, maxLength: 2 }),
        imagePullSecrets: fc.uniqueArray(fc.record({ name: fc.constantFrom('registry', 'mirror') }), { selector: (s) => s.name, maxLength: 1 }),
        labels: metadata,
        annotations: options.containersOnly ? fc.constant(undefined) : sometimes(stringDict(annotationKey, templatedString(annotationTrigger), 2), 1),
        merges: options.containersOnly ? fc.constant(undefined) : fc.array(merge, { maxLength: 2 }),
        qos: sometimes(fc.constantFrom('warn' as const, 'preserve-guaranteed' as const), 1),
        podResources: sometimes(fc.constantFrom('add' as const, 'share' as const), 1),
        nativeSidecars: sometimes(pick(NATIVE_SIDECAR_MODES), 1),
        nativeSidecarPosition: sometimes(pick(NATIVE_SIDECAR_POSITIONS), 1),
      },
      { requiredKeys: ['name', 'trigger'] },
    );
  });
}

/** Drops the pod-shape options a valid config cannot have for what this injection ended up adding. */
function withConsistentPodOptions(injection: Json): Json {
  const out = { ...injection };
  const containers: Json[] = [...(out.containers ?? []), ...(out.initContainers ?? [])];
  const requestsBoth = (container: Json) => ['cpu', 'memory'].every((name) => container.resources?.requests?.[name] ?? container.resources?.limits?.[name]);
  if (out.qos === 'preserve-guaranteed' && !containers.every(requestsBoth)) delete out.qos;
  if (!out.containers?.length) delete out.nativeSidecars;
  if (out.nativeSidecars === undefined || out.nativeSidecars === 'never') delete out.nativeSidecarPosition;
  return out;
}

function withoutEmpty(injection: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(injection)) {
    if (value === undefined) continue;
    if (Array.isArray(value) && value.length === 0) continue;
    if (value && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length === 0 && key !== 'trigger') continue;
    out[key] = value;
  }
  return out;
}

/** Configs `resolveInjectorConfig` accepts: 1–4 injections with every trigger type and every kind of addition. */
export function arbitraryInjectorConfig(options: ConfigOptions = {}): fc.Arbitrary<InjectorConfig> {
  const interactions = options.interactions ?? !options.containersOnly;
  const interaction = interactions
    ? sometimes(fc.record({ kind: pick(INTERACTIONS), from: fc.nat(), to: fc.nat() }), 2)
    : fc.constant(undefined);
  return fc
    .record({
      config: fc.record(
        {
          annotationPrefix: pick(ANNOTATION_PREFIXES),
          enabled: fc.constant(true),
          injections: fc.uniqueArray(injection(options), { selector: (i) => i.name, minLength: 1, maxLength: options.maxInjections ?? 4 }),
        },
        { requiredKeys: ['injections'] },
      ),
      interaction,
    })
    .map(({ config, interaction }) => {
      // Container and volume names are one namespace across injections: later duplicates are dropped.
      const containers = new Set<string>();
      const volumes = new Set<string>();
      const generated = config.injections as unknown as Json[];
      const interacting = interaction ? interact(generated, interaction.kind, interaction.from, interaction.to) : generated;
      const injections = interacting.map((raw) => {
        const item: Json = { ...raw };
        for (const field of ['containers', 'initContainers'] as const) {
          item[field] = (item[field] ?? []).filter((c: Json) => !containers.has(c.name) && containers.add(c.name));
        }
        item.volumes = (item.volumes ?? []).filter((v: Json) => !volumes.has(v.name) && volumes.add(v.name));
        const cleaned = withConsistentPodOptions(withoutEmpty(item));
        const notAdding = new Set(['name', 'trigger', 'targetKinds', 'qos', 'podResources', 'nativeSidecars', 'nativeSidecarPosition']);
        const adds = Object.keys(cleaned).some((key) => !notAdding.has(key));
        if (adds) return cleaned;
        const fallback = options.containersOnly ? { volumes: [{ name: `${cleaned.name}-data`.slice(-63).replace(/^-+/, ''), emptyDir: {} }] } : { env: [{ name: 'INJECTED_BY', value: String(cleaned.name) }] };
        return { ...cleaned, ...fallback };
      });
      // Through JSON, as the webhook reads it (fast-check may build null-prototype objects).
      return JSON.parse(JSON.stringify({ ...config, injections })) as InjectorConfig;
    })
    .filter((config) => injectorConfigIssues(config).length === 0);
}

// ---------------------------------------------------------------------------------------------
// Scenarios: a config and a request that speaks to it

export interface Scenario extends ScenarioRequest {
  readonly config: InjectorConfig;
  readonly resolved: ResolvedInjectorConfig;
}

function containerNames(list: unknown): string {
  return `[${[...namesIn(list)].join(', ')}]`;
}

/** What fast-check prints for a counterexample: the request's pod in Kubernetes terms, and the config. */
export function describeScenario(scenario: ScenarioRequest & { config?: InjectorConfig }): string {
  const { request } = scenario;
  const pod = podOf(request.object);
  const lines = [
    `${request.kind.kind} ${request.operation} from recording "${scenario.review}" (uid ${request.uid})`,
    `  containers ${containerNames(pod.spec?.containers)}, initContainers ${containerNames(pod.spec?.initContainers)}, volumes ${containerNames(pod.spec?.volumes)}`,
    `  labels ${JSON.stringify(pod.metadata?.labels ?? {})}`,
    `  annotations ${JSON.stringify(Object.fromEntries(Object.entries(pod.metadata?.annotations ?? {}).filter(([key]) => key !== 'kubectl.kubernetes.io/last-applied-configuration')))}`,
  ];
  if (pod !== request.object) {
    const objectAnnotations = Object.entries(request.object.metadata?.annotations ?? {}).filter(([key]) => key !== 'kubectl.kubernetes.io/last-applied-configuration');
    lines.push(`  object labels ${JSON.stringify(request.object.metadata?.labels ?? {})}, object annotations ${JSON.stringify(Object.fromEntries(objectAnnotations))}`);
  }
  lines.push(`  containers in full: ${JSON.stringify(pod.spec?.containers)}`);
  if (pod.spec?.initContainers) lines.push(`  initContainers in full: ${JSON.stringify(pod.spec.initContainers)}`);
  if (pod.spec?.resources) lines.push(`  pod-level resources: ${JSON.stringify(pod.spec.resources)}`);
  if (scenario.config) lines.push(`config: ${JSON.stringify(scenario.config)}`);
  return lines.join('\n');
}

function asScenario(config: InjectorConfig, request: ScenarioRequest): Scenario {
  const scenario = { ...request, config, resolved: resolveInjectorConfig(config) };
  Object.defineProperty(scenario, fc.toStringMethod, { value: () => describeScenario(scenario), enumerable: false });
  return scenario;
}

export function arbitraryScenario(options: ConfigOptions = {}): fc.Arbitrary<Scenario> {
  return arbitraryInjectorConfig(options).chain((config) =>
    arbitraryRequest(config.annotationPrefix ?? DEFAULT_ANNOTATION_PREFIX, config.injections.map((i) => i.name), options.podLevelResources ? 'always' : 'sometimes').map((request) =>
      asScenario(config, request),
    ),
  );
}
