// Test helper: validates MutatingAdmissionPolicy(Binding) manifests against the OpenAPI v3 schema of
// their own API version (test/fixtures/openapi-v3-mutating-admission-policy/), strictly: unknown fields
// are violations, as with fieldValidation=Strict. The rules are the ones test/support/openapi-validator.ts
// applies to the Kubernetes 1.32 documents; kept apart so each API version is its own Ajv instance
// (v1's MatchResources must not satisfy a v1alpha1 reference by accident).
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv, { type ValidateFunction } from 'ajv';

export const ADMISSION_POLICY_SCHEMA_DIR = path.resolve(__dirname, '../fixtures/openapi-v3-mutating-admission-policy');
const LOCAL_REF = '#/components/schemas/';

type JsonObject = Record<string, any>;

function strict(schema: any, base: string): void {
  if (Array.isArray(schema)) return schema.forEach((item) => strict(item, base));
  if (schema === null || typeof schema !== 'object') return;
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith(LOCAL_REF)) schema.$ref = base + schema.$ref.slice(LOCAL_REF.length);
  if (schema['x-kubernetes-int-or-string'] === true && !schema.anyOf && !schema.oneOf) {
    delete schema.type;
    schema.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (schema.properties && schema.additionalProperties === undefined && !schema.allOf && !schema.anyOf && !schema.oneOf && schema['x-kubernetes-preserve-unknown-fields'] !== true) {
    schema.additionalProperties = false;
  }
  for (const sub of Object.values(schema.properties ?? {})) strict(sub, base);
  for (const key of ['items', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf']) if (schema[key] !== undefined) strict(schema[key], base);
}

const validators = new Map<string, ValidateFunction>();

function validatorFor(version: string, kind: string): ValidateFunction {
  const key = `${version}/${kind}`;
  const cached = validators.get(key);
  if (cached) return cached;
  const file = path.join(ADMISSION_POLICY_SCHEMA_DIR, `apis_admissionregistration.k8s.io_${version}.json`);
  if (!fs.existsSync(file)) throw new Error(`no OpenAPI document for admissionregistration.k8s.io/${version} in ${ADMISSION_POLICY_SCHEMA_DIR}`);
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && Math.abs(n) <= 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('date-time', true);
  ajv.addFormat('byte', true);
  const base = `https://k8s.test/admissionregistration/${version}/`;
  let schemaName: string | undefined;
  for (const [name, schema] of Object.entries(doc.components.schemas as JsonObject)) {
    strict(schema, base);
    ajv.addSchema(schema, base + name);
    if ((schema['x-kubernetes-group-version-kind'] ?? []).some((gvk: JsonObject) => gvk.kind === kind && gvk.version === version)) schemaName = name;
  }
  if (!schemaName) throw new Error(`admissionregistration.k8s.io/${version} has no kind ${kind}`);
  const validate = ajv.getSchema(base + schemaName)!;
  validators.set(key, validate);
  return validate;
}

/** Every violation of `manifest` against the schema of its apiVersion and kind, as "path: message". */
export function admissionPolicyViolations(manifest: JsonObject): string[] {
  const [group, version] = String(manifest.apiVersion).split('/');
  if (group !== 'admissionregistration.k8s.io') throw new Error(`${manifest.apiVersion} is not admissionregistration.k8s.io`);
  const validate = validatorFor(version, manifest.kind);
  if (validate(manifest)) return [];
  return (validate.errors ?? []).map((error) => {
    const extra = error.keyword === 'additionalProperties' ? ` (${(error.params as JsonObject).additionalProperty})` : error.keyword === 'enum' ? ` (${JSON.stringify((error.params as JsonObject).allowedValues)})` : '';
    return `${error.instancePath || '/'}: ${error.message}${extra}`;
  });
}
