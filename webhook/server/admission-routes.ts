// Each route a webhook entry's path asks for (admissionRoute, in the config), answered by the engine: the
// config as loaded, one revision of it, or the answer for a revision label naming nothing served.

import { type AdmissionRoute, type ResolvedInjectorConfig, type RevisionChooser, revisionConfig } from '../config';
import { AdmissionRequest, type EvaluationContext, MutationResult, evaluate, unservedRevisionAnswer } from '../engine';

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

