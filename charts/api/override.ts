// What app teams may set per workload by annotation, as a class with static factories: a resource
// quantity within bounds, or an environment variable's value from a fixed set.

import type { ContainerOverride } from '../../webhook/config';
import { ResourceOverrideField } from './choices';

/** Options of `WorkloadOverride.resource`. */
export interface ResourceOverrideOptions {
  /** The annotation the value is read from, a qualified name such as `envoy.example.com/cpu-request`:
   * on the pod (for a workload, its pod template or its own metadata, the template's winning). */
  readonly annotation: string;
  /** The name of the injected container (one of the injection's `containers` or `initContainers`). */
  readonly container: string;
  /** The quantity set; the container's other requests and limits stay as configured. */
  readonly resource: ResourceOverrideField;
  /** The largest value accepted, a quantity such as `"2"` or `"1Gi"`; a larger one is ignored, with a warning. */
  readonly max: string;
  /** The smallest value accepted, a quantity. @default any value above zero */
  readonly min?: string;
  /** Whether the namespace's annotation of the same key is a default for the pods in it (the webhook then
   * lists and watches namespaces). @default false */
  readonly fromNamespace?: boolean;
}

/** Options of `WorkloadOverride.env`. */
export interface EnvOverrideOptions {
  /** The annotation the value is read from, as for a resource override. */
  readonly annotation: string;
  /** The name of the injected container (one of the injection's `containers` or `initContainers`). */
  readonly container: string;
  /** The environment variable, which the container's `env` must list with a literal `value` (the default). */
  readonly env: string;
  /** The values accepted, exactly as written; any other is ignored, with a warning. */
  readonly allowedValues: string[];
  /** As for a resource override. @default false */
  readonly fromNamespace?: boolean;
}

/** A field of an injected container that app teams may set per workload by annotation. */
export class WorkloadOverride {
  /** One resource quantity of the container, within bounds. */
  public static resource(options: ResourceOverrideOptions): WorkloadOverride {
    const { annotation, container, resource, max, min, fromNamespace } = options ?? ({} as ResourceOverrideOptions);
    return new WorkloadOverride(withoutUndefined({ annotation, container, resource, max, min, fromNamespace }) as unknown as ContainerOverride);
  }

  /** The value of one environment variable of the container, from a fixed set. */
  public static env(options: EnvOverrideOptions): WorkloadOverride {
    const { annotation, container, env, allowedValues, fromNamespace } = options ?? ({} as EnvOverrideOptions);
    return new WorkloadOverride(withoutUndefined({ annotation, container, env, allowedValues, fromNamespace }) as unknown as ContainerOverride);
  }

  private constructor(private readonly config: ContainerOverride) {}

  /** @internal The override as the config's JSON. */
  public _toConfig(): ContainerOverride {
    return this.config;
  }
}

function withoutUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined));
}
