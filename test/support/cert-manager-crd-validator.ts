// Validates cert-manager objects against the OpenAPI schema of cert-manager's own CRD manifests
// (test/fixtures/cert-manager/, from a cert-manager release), as strictly as the apiserver with
// fieldValidation=Strict: a field the schema does not declare is a violation, not pruned silently.
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv, { ValidateFunction } from 'ajv';
import { parse } from 'yaml';

const CRD_DIR = path.resolve(__dirname, '..', 'fixtures', 'cert-manager');

type Schema = Record<string, any>;

/** Unknown fields become violations wherever the schema lists properties and does not keep unknowns. */
function strict(schema: Schema): Schema {
  if (Array.isArray(schema)) return schema.map(strict);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) out[key] = typeof value === 'object' ? strict(value) : value;
  if (out.properties && out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields']) out.additionalProperties = false;
  return out;
}

const validators = new Map<string, ValidateFunction>();
let loaded = false;

function load(): void {
  if (loaded) return;
  loaded = true;
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  for (const file of fs.readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml'))) {
    const crd = parse(fs.readFileSync(path.join(CRD_DIR, file), 'utf8'));
    for (const version of crd.spec.versions) {
      const schema = strict(version.schema.openAPIV3Schema);
      validators.set(`${crd.spec.group}/${version.name}/${crd.spec.names.kind}`, ajv.compile(schema));
    }
  }
}

/** Every violation of `manifest` against its CRD's schema, as "path: message"; [] when valid. */
export function certManagerViolations(manifest: Schema): string[] {
  load();
  const validate = validators.get(`${manifest.apiVersion}/${manifest.kind}`);
  if (!validate) throw new Error(`no cert-manager CRD in ${CRD_DIR} defines ${manifest.apiVersion} ${manifest.kind}`);
  if (validate(manifest)) return [];
  return (validate.errors ?? []).map((error) => {
    const where = error.instancePath.replace(/^\//, '').replace(/\//g, '.') || '(root)';
    const extra = error.keyword === 'additionalProperties' ? ` "${(error.params as { additionalProperty: string }).additionalProperty}"` : '';
    return `${where}: ${error.message}${extra}`;
  });
}

/** The kinds the fixtures define, as "group/version/Kind". */
export function certManagerKinds(): string[] {
  load();
  return [...validators.keys()];
}
