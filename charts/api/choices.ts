// The closed sets of words in the props, as enums jsii carries to Python, Java, Go and C#. Each member's
// value is the word the config, the webhook and Kubernetes use ('Fail', 'requests.cpu'), so a member is
// also what the config types take and the ConfigMap's JSON is the same whichever language wrote the props.

/** What the apiserver does when the injector cannot answer (the webhook's or the policies' failurePolicy). */
export enum FailurePolicy {
  /** Admit the object unchanged: workloads keep starting while the injector is down, without sidecars. */
  IGNORE = 'Ignore',
  /** Refuse the object: nothing starts without its sidecars while the injector is down. */
  FAIL = 'Fail',
}

/** When the kubelet pulls the webhook image. */
export enum ImagePullPolicy {
  /** Every time a container starts. */
  ALWAYS = 'Always',
  /** Only when the node does not have the image. */
  IF_NOT_PRESENT = 'IfNotPresent',
  /** Never: the image must be on the node. */
  NEVER = 'Never',
}

/** How much the webhook server logs. */
export enum LogLevel {
  /** Everything, one line per admission among it. */
  DEBUG = 'debug',
  /** Starts, reloads, decisions that change pods, and problems. */
  INFO = 'info',
  /** Problems only. */
  WARN = 'warn',
  /** Failures only. */
  ERROR = 'error',
}

/** Which part of the cluster applies the injections. */
export enum InjectorBackend {
  /** The webhook's Deployment, Service, Secret, ConfigMap and MutatingWebhookConfiguration. */
  WEBHOOK = 'webhook',
  /** MutatingAdmissionPolicies and bindings in the kube-apiserver, and no webhook objects. */
  ADMISSION_POLICY = 'admissionPolicy',
  /** Policies where CEL can express an injection, the webhook for the others. */
  BOTH_WHERE_POSSIBLE = 'both-where-possible',
}

/** The `admissionregistration.k8s.io` version the policies are written in. */
export enum AdmissionPolicyApiVersion {
  /** Kubernetes 1.36 and later. */
  V1 = 'v1',
  /** Kubernetes 1.34 and 1.35, with the MutatingAdmissionPolicy feature gate and this version in the runtime config. */
  V1BETA1 = 'v1beta1',
  /** Kubernetes 1.32 and 1.33, with the MutatingAdmissionPolicy feature gate and this version in the runtime config. */
  V1ALPHA1 = 'v1alpha1',
}

/** A Pod Security Standards level. */
export enum PodSecurityLevel {
  /** No restrictions. */
  PRIVILEGED = 'privileged',
  /** Prevents known privilege escalations. */
  BASELINE = 'baseline',
  /** Hardened: non-root, no capabilities, a seccomp profile, no privilege escalation. */
  RESTRICTED = 'restricted',
}

/** A kind whose pods an injection changes: Pods themselves, or the pod templates of workloads. */
export enum TargetKind {
  /** Each pod as it is created. */
  POD = 'Pod',
  /** A Deployment's pod template. */
  DEPLOYMENT = 'Deployment',
  /** A StatefulSet's pod template. */
  STATEFUL_SET = 'StatefulSet',
  /** A DaemonSet's pod template. */
  DAEMON_SET = 'DaemonSet',
  /** A ReplicaSet's pod template. */
  REPLICA_SET = 'ReplicaSet',
  /** A Job's pod template. */
  JOB = 'Job',
  /** A CronJob's pod template (`spec.jobTemplate.spec.template`). */
  CRON_JOB = 'CronJob',
}

/** What an injection does when it would change the pod's QoS class. */
export enum QosPolicy {
  /** The admission response warns, and the reason is counted. */
  WARN = 'warn',
  /** In a Guaranteed pod, the injected containers' cpu and memory limits are set to their requests. */
  PRESERVE_GUARANTEED = 'preserve-guaranteed',
}

/** What an injection does to a pod that sets pod-level resources (`spec.resources`, Kubernetes 1.34+). */
export enum PodResourcesPolicy {
  /** The injected containers' requests and limits are added to the pod's. */
  ADD = 'add',
  /** The pod's budget stays as written; the injected containers live inside it. */
  SHARE = 'share',
}

/** Whether an injection changes pods or only says what it would add. */
export enum InjectionMode {
  /** Inject. */
  ENFORCE = 'enforce',
  /** Change nothing; warn with what would have been added, and count it. */
  AUDIT = 'audit',
}

/** Which pods get an injection's `containers` as native sidecars instead of regular containers. */
export enum NativeSidecarMode {
  /** No pod: regular containers. */
  NEVER = 'never',
  /** Job pods, and the pod templates of Jobs and CronJobs. */
  JOBS = 'jobs',
  /** Every pod. */
  ALWAYS = 'always',
}

/** Where native sidecars go among the pod's init containers. */
export enum NativeSidecarPosition {
  /** Before the pod's own init containers, which can then use them. */
  FIRST = 'first',
  /** After the pod's own init containers. */
  LAST = 'last',
}

/** What a merge does when a nested object of its fields does not exist in the container. */
export enum MergeWhenMissing {
  /** Leave the container alone (a probe without a handler would be refused). */
  SKIP = 'skip',
  /** Create the nested object. */
  CREATE = 'create',
}

/** How a label's value relates to a requirement's values. */
export enum LabelSelectorOperator {
  /** The label's value is one of the values. */
  IN = 'In',
  /** The label is absent, or its value is none of the values. */
  NOT_IN = 'NotIn',
  /** The label is present, whatever its value. */
  EXISTS = 'Exists',
  /** The label is absent. */
  DOES_NOT_EXIST = 'DoesNotExist',
}

/** What the reconciler does about pods missing an injection (admitted while the injector was down). */
export enum MissingAction {
  /** Tell, in Events and PolicyReports. */
  REPORT = 'report',
  /** Restart their Deployment, StatefulSet or DaemonSet once the injector can inject. */
  RESTART = 'restart',
}

/** What the reconciler does about pods running an outdated injection. */
export enum OutdatedAction {
  /** Tell, in Events and PolicyReports. */
  REPORT = 'report',
  /** Restart their workload. */
  RESTART = 'restart',
  /** Replace the sidecar images in the running pods where only images differ; restart the rest. */
  IN_PLACE = 'in-place',
}

/** The resource quantity of an injected container that an override sets. */
export enum ResourceOverrideField {
  /** `resources.requests.cpu`. */
  REQUESTS_CPU = 'requests.cpu',
  /** `resources.requests.memory`. */
  REQUESTS_MEMORY = 'requests.memory',
  /** `resources.limits.cpu`. */
  LIMITS_CPU = 'limits.cpu',
  /** `resources.limits.memory`. */
  LIMITS_MEMORY = 'limits.memory',
}
