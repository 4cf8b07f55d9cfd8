// Where the CLI gets the injector from: `--from dist/` reads what `cdk8s synth` wrote (the ConfigMap's
// config.json, which the webhook loads, and the MutatingWebhookConfiguration, which decides whether
// the apiserver calls it); `--config config.json` reads the config alone.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { CONFIG_FILE_NAME, InjectorConfigError, ResolvedInjectorConfig, loadInjectorConfig } from '../config';
import type { MutatingWebhookConfiguration } from '../engine/webhook-match';
import { InputDocument, InputError, describeLocation, readManifests } from './manifest-input';

export interface InjectorSource {
  /** The config the webhook would load, validated by the same validator. */
  readonly config: ResolvedInjectorConfig;
  /** The webhook configuration; undefined with `--config`, when only the engine can be evaluated. */
  readonly webhookConfiguration?: MutatingWebhookConfiguration;
  /** What was read, for messages: `dist/sidecar-injector.k8s.yaml: ConfigMap sidecar-injector/...`. */
  readonly description: string;
}

function describeObject(object: Record<string, any>): string {
  const namespace = object.metadata?.namespace;
  return `${object.kind} ${namespace ? `${namespace}/` : ''}${object.metadata?.name ?? '(no name)'}`;
}

function isConfigMapWithConfig(document: InputDocument): boolean {
  const object = document.object as Record<string, any> | null;
  return object?.apiVersion === 'v1' && object.kind === 'ConfigMap' && typeof object.data?.[CONFIG_FILE_NAME] === 'string';
}

function isWebhookConfiguration(document: InputDocument): boolean {
  const object = document.object as Record<string, any> | null;
  return object?.kind === 'MutatingWebhookConfiguration' && String(object.apiVersion).startsWith('admissionregistration.k8s.io/');
}

/** The namespaces of the Services a webhook configuration calls. */
function serviceNamespaces(configuration: Record<string, any>): Set<string> {
  const namespaces = new Set<string>();
  for (const webhook of configuration.webhooks ?? []) {
    const namespace = webhook?.clientConfig?.service?.namespace;
    if (typeof namespace === 'string') namespaces.add(namespace);
  }
  return namespaces;
}

function parseConfig(text: string, subject: string): ResolvedInjectorConfig {
  try {
    return loadInjectorConfig(text);
  } catch (error) {
    if (error instanceof InjectorConfigError) throw new InputError([`${subject}: ${error.message}`]);
    throw error;
  }
}

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

/** The names of the MutatingAdmissionPolicies in a synthesized directory (or file). */
export function synthesizedPolicyNames(from: string): string[] {
  return readManifests(synthesizedFiles(from))
    .map((document) => document.object as Record<string, any> | null)
    .filter((object) => object?.kind === 'MutatingAdmissionPolicy' && String(object.apiVersion).startsWith('admissionregistration.k8s.io/'))
    .map((object) => String(object!.metadata?.name));
}

/** Reads a synthesized directory (or one synthesized file): its injector ConfigMap and webhook configuration. */
export function loadSynthesized(from: string): InjectorSource {
  const documents = readManifests(synthesizedFiles(from));
  const configMaps = documents.filter(isConfigMapWithConfig);
  if (configMaps.length === 0) {
    throw new InputError([`--from ${from}: no ConfigMap with a ${CONFIG_FILE_NAME} key; is this the output of cdk8s synth for a SidecarInjector?`]);
  }
  const webhookConfigurations = documents.filter(isWebhookConfiguration);
  // Each injector's webhook configuration calls the Service in the namespace of its ConfigMap.
  const pairs = configMaps.flatMap((configMap) => {
    const namespace = (configMap.object as Record<string, any>).metadata?.namespace;
    return webhookConfigurations
      .filter((candidate) => serviceNamespaces(candidate.object as Record<string, any>).has(namespace))
      .map((webhookConfiguration) => ({ configMap, webhookConfiguration }));
  });
  const found = (list: InputDocument[]) => list.map((document) => `${describeObject(document.object!)} (${describeLocation(document)})`).join('; ');
  if (pairs.length === 0) {
    if (webhookConfigurations.length === 0) throw new InputError([`--from ${from}: no MutatingWebhookConfiguration; is this the output of cdk8s synth for a SidecarInjector?`]);
    throw new InputError([`--from ${from}: no MutatingWebhookConfiguration calls a Service in the namespace of ${found(configMaps)}`]);
  }
  if (pairs.length > 1) {
    throw new InputError([
      `--from ${from}: holds ${pairs.length} injectors (${pairs.map((pair) => describeObject(pair.configMap.object!)).join(', ')}); point --from at one synthesized file`,
    ]);
  }
  const { configMap, webhookConfiguration } = pairs[0];
  const configMapObject = configMap.object as Record<string, any>;
  const subject = `${describeLocation(configMap)}: ${describeObject(configMapObject)} ${CONFIG_FILE_NAME}`;
  return {
    config: parseConfig(configMapObject.data[CONFIG_FILE_NAME], subject),
    webhookConfiguration: webhookConfiguration.object as MutatingWebhookConfiguration,
    description: `${describeObject(configMapObject)} (${configMap.source}) and ${describeObject(webhookConfiguration.object!)} (${webhookConfiguration.source})`,
  };
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
