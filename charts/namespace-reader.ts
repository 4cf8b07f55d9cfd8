// What the webhook needs to read namespace defaults for overrides (`fromNamespace`), and nothing more:
// a ServiceAccount of its own, a ClusterRole with the two verbs its namespace watch calls (list and
// watch namespaces), and the binding. Made only when some override reads namespaces; otherwise the
// webhook keeps no RBAC and no service-account token, as before.
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';

/** The webhook's RBAC for namespace defaults. */
export interface NamespaceReader {
  /** The webhook's own ServiceAccount (its pods mount its projected token; it automounts nowhere else). */
  readonly serviceAccount: k8s.KubeServiceAccount;
  /** `list` and `watch` on namespaces, nothing more. */
  readonly clusterRole: k8s.KubeClusterRole;
  /** Binds the ClusterRole to the ServiceAccount. */
  readonly clusterRoleBinding: k8s.KubeClusterRoleBinding;
}

/** The rules of the ClusterRole: exactly what webhook/server/namespace-watch.ts calls. */
export const NAMESPACE_READER_RULES: readonly k8s.PolicyRule[] = [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] }];

export interface NamespaceReaderSettings {
  /** Name of the ServiceAccount (the Deployment's name). */
  readonly name: string;
  readonly namespace: string;
  /** Name of the ClusterRole and its binding: cluster-wide, so derived from the webhook configuration's. */
  readonly clusterName: string;
  readonly labels: Record<string, string>;
}

export function namespaceReader(scope: Construct, settings: NamespaceReaderSettings): NamespaceReader {
  const serviceAccount = new k8s.KubeServiceAccount(scope, 'ServiceAccount', {
    metadata: { name: settings.name, namespace: settings.namespace, labels: settings.labels },
    // The token is mounted by the pod spec, projected and short-lived; never a Secret.
    automountServiceAccountToken: false,
  });
  const clusterRole = new k8s.KubeClusterRole(scope, 'NamespaceReaderRole', {
    metadata: { name: settings.clusterName, labels: settings.labels },
    rules: [...NAMESPACE_READER_RULES],
  });
  const clusterRoleBinding = new k8s.KubeClusterRoleBinding(scope, 'NamespaceReaderBinding', {
    metadata: { name: settings.clusterName, labels: settings.labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: settings.clusterName },
    subjects: [{ kind: 'ServiceAccount', name: settings.name, namespace: settings.namespace }],
  });
  return { serviceAccount, clusterRole, clusterRoleBinding };
}
