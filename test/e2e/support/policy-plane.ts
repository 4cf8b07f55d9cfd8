// A control plane whose apiserver serves MutatingAdmissionPolicy at the version that release has it:
// what every e2e file that synthesizes both backends starts from.
import { ControlPlane, type ControlPlaneBinaries, type ControlPlaneOptions, binaryVersion, policyApiVersionFor, policyApiserverFlags } from './control-plane';
import type { AdmissionPolicyApiVersion } from '../../../charts/admission-policy';

export interface PolicyServingPlane {
  readonly plane: ControlPlane;
  /** The apiserver's --version line. */
  readonly version: string;
  readonly policyApiVersion: AdmissionPolicyApiVersion;
}

/** Starts the plane with the policy feature gate and runtime config its apiserver's release needs. */
export async function startPolicyServingPlane(
  binaries: ControlPlaneBinaries,
  options: Omit<ControlPlaneOptions, 'apiserverFlags'> & { readonly featureGates?: readonly string[] } = {},
): Promise<PolicyServingPlane> {
  const version = binaryVersion(binaries.kubeApiserver);
  const policyApiVersion = policyApiVersionFor(version);
  const { featureGates = [], ...planeOptions } = options;
  const plane = await ControlPlane.start(binaries, { ...planeOptions, apiserverFlags: policyApiserverFlags(policyApiVersion, featureGates) });
  return { plane, version, policyApiVersion };
}

/**
 * A test's own MutatingAdmissionPolicy on pod creation, one JSONPatch `expression`, and its binding
 * (`matchResources` as given), both at `apiVersion`.
 */
export function podCreatePolicy(
  name: string,
  apiVersion: AdmissionPolicyApiVersion,
  expression: string,
  failurePolicy: 'Ignore' | 'Fail',
  matchResources: Record<string, unknown>,
): any[] {
  return [
    {
      apiVersion: `admissionregistration.k8s.io/${apiVersion}`,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'] }] },
        mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression } }],
        failurePolicy,
        reinvocationPolicy: 'Never',
      },
    },
    {
      apiVersion: `admissionregistration.k8s.io/${apiVersion}`,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, matchResources },
    },
  ];
}
