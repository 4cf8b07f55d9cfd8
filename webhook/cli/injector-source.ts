// Where the CLI gets the injector from: `--from dist/` reads what `cdk8s synth` wrote (the ConfigMap's
// config.json, which the webhook loads, and the MutatingWebhookConfiguration, which decides whether
// the apiserver calls it; or, for the policy backend, the config the MutatingAdmissionPolicies carry
// in an annotation and the scope of their bindings); `--config config.json` reads the config alone.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { InputError, readManifests } from './manifest-input';
import { type InjectorSource, injectorFromDocuments, parseConfig } from '../fleet/synthesized-injectors';

export type { InjectorSource } from '../fleet/synthesized-injectors';

/** The synthesized files `--from` names: a directory's .yaml files in name order, or the one file. */
function synthesizedFiles(from: string): string[] {
  let names: string[];
  try {
    names = fs.statSync(from).isDirectory()
      ? fs.readdirSync(from).filter((file) => /\.ya?ml$/i.test(file)).sort().map((file) => path.join(from, file))
      : [from];
  } catch (error) {
    throw new InputError([`--from ${from}: cannot read: ${(error as Error).message}`]);
  }
  if (names.length === 0) throw new InputError([`--from ${from}: no .yaml file there; run cdk8s synth first`]);
  return names;
}

/**
 * Reads a synthesized directory (or one synthesized file): its injector ConfigMap and webhook
 * configuration, or its MutatingAdmissionPolicies (whose annotation holds the same config) and bindings.
 */
export function loadSynthesized(from: string): InjectorSource {
  return injectorFromDocuments(`--from ${from}`, readManifests(synthesizedFiles(from)));
}

/** Reads an InjectorConfig JSON file (what the construct writes to the ConfigMap's config.json). */
export function loadConfigFile(file: string): InjectorSource {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new InputError([`--config ${file}: cannot read: ${(error as Error).message}`]);
  }
  return { config: parseConfig(text, `--config ${file}`), description: file };
}
