// Regenerates kubernetes-schemas.json from the Kubernetes OpenAPI v3 documents:
//   npx tsx charts/schema/generate-kubernetes-schemas.ts [openapi-dir]
// It keeps only the component schemas an injection's objects need (Container, Volume, VolumeMount,
// EnvVar, LocalObjectReference and everything they reference), without descriptions, so the package
// ships ~100 KB instead of the 3 MB documents. A test keeps the file equal to what this writes.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The Kubernetes release of the documents the shipped schemas come from. */
export const KUBERNETES_SCHEMA_VERSION = '1.32';

/** The schema each kind of injected object is checked against. */
export const INJECTED_OBJECT_SCHEMAS = {
  container: 'io.k8s.api.core.v1.Container',
  volume: 'io.k8s.api.core.v1.Volume',
  volumeMount: 'io.k8s.api.core.v1.VolumeMount',
  envVar: 'io.k8s.api.core.v1.EnvVar',
  localObjectReference: 'io.k8s.api.core.v1.LocalObjectReference',
} as const;

/** cdk8s's generated `k8s` types (cdk8s-plus-27's, and what `cdk8s import` writes) spell some fields
 * differently (`downwardApi`, `hostIp`); their toJson_* functions map them back. Read from here. */
const CDK8S_K8S_IMPORT = require.resolve('cdk8s-plus-27/lib/imports/k8s.js');

/** Where the documents live in this repository (not shipped). */
export const OPENAPI_DOCUMENTS_DIR = path.resolve(__dirname, '..', '..', 'test', 'fixtures', `openapi-v3-k8s-${KUBERNETES_SCHEMA_VERSION}`);
/** The generated file, next to this script. */
export const GENERATED_SCHEMAS_FILE = path.join(__dirname, 'kubernetes-schemas.json');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The text of kubernetes-schemas.json, generated from the core/v1 document in `openapiDir`. */
export function generateKubernetesSchemas(openapiDir = OPENAPI_DOCUMENTS_DIR): string {
  const document = JSON.parse(fs.readFileSync(path.join(openapiDir, 'api_v1.json'), 'utf8')) as { components: { schemas: Record<string, Json> } };
  const all = document.components.schemas;
  const kept: Record<string, Json> = {};
  const pending: string[] = Object.values(INJECTED_OBJECT_SCHEMAS);
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (name in kept) continue;
    const schema = all[name];
    if (schema === undefined) throw new Error(`${name} is not in ${openapiDir}/api_v1.json`);
    kept[name] = withoutDescriptions(schema);
    for (const ref of referencedSchemas(schema)) pending.push(ref);
  }
  const sorted = Object.fromEntries(Object.keys(kept).sort().map((name) => [name, kept[name]]));
  const typedNames = typedFieldNames(new Set(Object.values(kept).flatMap(propertyNames)));
  return JSON.stringify({ kubernetesVersion: KUBERNETES_SCHEMA_VERSION, roots: INJECTED_OBJECT_SCHEMAS, typedNames, schemas: sorted }, null, 1) + '\n';
}

/** `{ downwardApi: 'downwardAPI', ... }`: each field the cdk8s types spell differently, for the fields kept. */
function typedFieldNames(fields: Set<string>): Record<string, string> {
  const source = fs.readFileSync(CDK8S_K8S_IMPORT, 'utf8');
  const names: Record<string, string> = {};
  // Lines of the generated toJson_* functions: `'downwardAPI': toJson_DownwardAPIVolumeSource(obj.downwardApi),`
  for (const match of source.matchAll(/^\s+'([^']+)': .*\bobj\.([A-Za-z0-9_$]+)/gm)) {
    const [, kubernetesName, typedName] = match;
    if (kubernetesName !== typedName && fields.has(kubernetesName)) names[typedName] = kubernetesName;
  }
  return Object.fromEntries(Object.keys(names).sort().map((key) => [key, names[key]]));
}

function propertyNames(schema: Json): string[] {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return [];
  const properties = schema.properties;
  return properties !== null && typeof properties === 'object' && !Array.isArray(properties) ? Object.keys(properties) : [];
}

function withoutDescriptions(schema: Json): Json {
  if (Array.isArray(schema)) return schema.map(withoutDescriptions);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(schema)) {
    // `properties` maps field names to schemas: a field called "description" must stay.
    if (key === 'description' && typeof value === 'string') continue;
    out[key] = key === 'properties' && value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([field, sub]) => [field, withoutDescriptions(sub)]))
      : withoutDescriptions(value);
  }
  return out;
}

function referencedSchemas(schema: Json): string[] {
  if (Array.isArray(schema)) return schema.flatMap(referencedSchemas);
  if (schema === null || typeof schema !== 'object') return [];
  const refs: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$ref' && typeof value === 'string') refs.push(value.replace('#/components/schemas/', ''));
    else refs.push(...referencedSchemas(value));
  }
  return refs;
}

if (require.main === module) {
  const text = generateKubernetesSchemas(process.argv[2]);
  fs.writeFileSync(GENERATED_SCHEMAS_FILE, text);
  console.log(`wrote ${path.relative(process.cwd(), GENERATED_SCHEMAS_FILE)} (${(text.length / 1024).toFixed(0)} KiB)`);
}
