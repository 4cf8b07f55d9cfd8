import { Lazy } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { CONFIG_FILE_NAME } from '../webhook/config';

/** The ConfigMap the webhook loads its config from; `configJson` is called at synth, after every `addInjection()`. */
export function injectorConfigMap(scope: Construct, metadata: k8s.ObjectMeta, configJson: () => string): k8s.KubeConfigMap {
  return new k8s.KubeConfigMap(scope, 'ConfigMap', {
    metadata,
    data: Lazy.any({ produce: () => ({ [CONFIG_FILE_NAME]: configJson() }) }),
  });
}
