import { Construct } from 'constructs';
import { ConfigIssue } from '../webhook/config';

/** What two injectors in one app must not share. */
export interface InjectorIdentity {
  readonly namespaceName: string;
  readonly name: string;
  readonly serviceName: string;
  readonly webhookConfigurationName: string;
}

const CREATES_NAMESPACE = Symbol.for('cdk8s-sidecar-injector.createsNamespace');
const IS_INJECTOR = Symbol.for('cdk8s-sidecar-injector.SidecarInjector');

/**
 * The clashes between `injector` and the injectors already in its app: the same namespace and name
 * (the Deployment, Secret and ConfigMap), the same Service, the same webhook configuration, or the
 * same Namespace made twice. Each names the other construct's path.
 */
export function findInjectorClashes(injector: Construct & InjectorIdentity, createsNamespace: boolean): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const other of injector.node.root.node.findAll()) {
    if (other === injector) continue;
    const candidate = other as unknown as Record<symbol, unknown> & InjectorIdentity;
    // A marker instead of instanceof, so two copies of this package in one app are still compared.
    if (candidate[IS_INJECTOR] !== true) continue;
    const at = `the SidecarInjector "${other.node.path}"`;
    if (candidate.namespaceName === injector.namespaceName && candidate.name === injector.name) {
      issues.push({ path: 'name', message: `"${injector.namespaceName}/${injector.name}" is already used by ${at} (its Deployment, Secret and ConfigMap would be overwritten)` });
    } else if (candidate.namespaceName === injector.namespaceName && candidate.serviceName === injector.serviceName) {
      issues.push({ path: 'serviceName', message: `Service "${injector.namespaceName}/${injector.serviceName}" is already made by ${at}` });
    }
    if (candidate.webhookConfigurationName === injector.webhookConfigurationName) {
      issues.push({ path: 'webhookConfigurationName', message: `MutatingWebhookConfiguration "${injector.webhookConfigurationName}" is already made by ${at}` });
    }
    if (createsNamespace && candidate[CREATES_NAMESPACE] === true && candidate.namespaceName === injector.namespaceName) {
      issues.push({ path: 'createNamespace', message: `Namespace "${injector.namespaceName}" is already made by ${at}; set createNamespace: false on one of them` });
    }
  }
  return issues;
}

/** Marks a fully built injector, so the ones built after it in the app are checked against it. */
export function registerInjector(injector: Construct & InjectorIdentity, createsNamespace: boolean): void {
  const marked = injector as unknown as Record<symbol, unknown>;
  marked[IS_INJECTOR] = true;
  marked[CREATES_NAMESPACE] = createsNamespace;
}
