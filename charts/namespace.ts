import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';

/** The webhook's Namespace, enforcing the Pod Security "restricted" profile on everything in it. */
export function webhookNamespace(scope: Construct, name: string, labels: Record<string, string>): k8s.KubeNamespace {
  return new k8s.KubeNamespace(scope, 'Namespace', {
    metadata: {
      name,
      labels: {
        ...labels,
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/enforce-version': 'latest',
      },
    },
  });
}
