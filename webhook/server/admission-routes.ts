// The paths the webhook entries call: `/mutate` (the config as loaded), `/mutate/revisions/<name>` (one
// revision), `/mutate/unserved/<chooser>` (a revision label naming nothing served), each answered by the engine.

import { type ResolvedInjectorConfig, revisionConfig } from '../config';
import {
  AdmissionRequest,
  type EvaluationContext,
  MutationResult,
  type RevisionChooser,
  evaluate,
  unservedRevisionAnswer,
} from '../engine';

/**
 * What the path of a webhook entry asks for: `''` the config as loaded (`/mutate`), `revision:<name>`
 * one revision of it (`/mutate/revisions/<name>`), `unserved:namespace` or `unserved:workload` the
 * answer for a `<prefix>/rev` label that names nothing served (`/mutate/unserved/<chooser>`).
 */
export type AdmissionRoute = '' | `revision:${string}` | `unserved:${RevisionChooser}`;

const REVISION_PATH = /^\/mutate\/revisions\/([a-z0-9](?:[-a-z0-9]{0,38}[a-z0-9])?)$/;

/** The route of a webhook port request's URL (its query ignored), or undefined when no webhook entry calls it. */
export function admissionRoute(url: string): AdmissionRoute | undefined {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  if (path === '/mutate') return '';
  if (path === '/mutate/unserved/namespace') return 'unserved:namespace';
  if (path === '/mutate/unserved/workload') return 'unserved:workload';
  const revision = REVISION_PATH.exec(path);
  return revision ? `revision:${revision[1]}` : undefined;
}

/** The engine's answer under `route`: the loaded config, one revision of it, or the unserved-label answer. */
export function evaluateRoute(request: AdmissionRequest, loaded: ResolvedInjectorConfig, route: AdmissionRoute, context: EvaluationContext | undefined): MutationResult {
  if (route === '') return evaluate(request, loaded, context);
  if (route.startsWith('revision:')) {
    const name = route.slice('revision:'.length);
    const view = revisionConfig(loaded, name);
    return view ? evaluate(request, view, context) : unservedRevisionAnswer(request, loaded, { revision: name });
  }
  return unservedRevisionAnswer(request, loaded, route.slice('unserved:'.length) as RevisionChooser);
}

