// Which revision a pod should run, and which it runs: the same choice the webhook entries make (its pod
// template's `<prefix>/rev` label, else its namespace's, else the default tag), read from labels, so
// `status` gives the same answer from a ConfigMap, a policy's annotation or a webhook configuration.

import { type ResolvedInjectorConfig, annotationKeys, chosenRevision, defaultRevision, revisionConfig, revisionLabel, servedChoosers } from '../config';

/** A pod's revision: chosen now, and recorded when it was injected. */
export interface PodRevision {
  /** The revision the pod should run now; undefined when its label names nothing served. */
  readonly chosen?: string;
  /** Who chose: the pod's own label, its namespace's, or (neither labelled) the default tag. */
  readonly by: 'workload' | 'namespace' | 'default';
  /** The label's value, when a label chose (a tag or a revision's name). */
  readonly value?: string;
  /** The revision the pod records (`<prefix>/revision`); undefined when it records none. */
  readonly recorded?: string;
  /** Why no revision applies, when the label names nothing served: said in `status` and the webhook's warning alike. */
  readonly unserved?: string;
}

/** The pod's revision under `config`; undefined when the config has no revisions. */
export function podRevision(
  config: ResolvedInjectorConfig,
  podLabels: Readonly<Record<string, string>>,
  podAnnotations: Readonly<Record<string, string>>,
  namespaceLabels: Readonly<Record<string, string>> | undefined,
): PodRevision | undefined {
  if (!config.revisions) return undefined;
  const label = revisionLabel(config.annotationPrefix);
  const recorded = podAnnotations[annotationKeys(config.annotationPrefix).revision];
  const withRecorded = recorded === undefined ? {} : { recorded };
  const own = podLabels[label];
  const inNamespace = namespaceLabels?.[label];
  const value = own ?? inNamespace;
  if (value === undefined) {
    const chosen = defaultRevision(config);
    return { ...(chosen === undefined ? {} : { chosen }), by: 'default', ...withRecorded };
  }
  const by = own !== undefined ? 'workload' : 'namespace';
  const chosen = chosenRevision(config, value);
  if (chosen !== undefined) return { chosen, by, value, ...withRecorded };
  const who = by === 'workload' ? 'the pod' : 'its namespace';
  return { by, value, ...withRecorded, unserved: `${who} is labelled ${label}=${JSON.stringify(value)}, which names no revision or tag served (served: ${servedChoosers(config).join(', ')})` };
}

/**
 * The config a pod is measured against: its chosen revision's view, `config` itself without revisions
 * (`revision` undefined), undefined when its label names nothing served.
 */
export function appliedConfig(config: ResolvedInjectorConfig, revision: PodRevision | undefined): ResolvedInjectorConfig | undefined {
  if (revision === undefined) return config;
  return revision.chosen === undefined ? undefined : revisionConfig(config, revision.chosen);
}
