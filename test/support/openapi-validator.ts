/**
 * Test helper: validates Kubernetes manifests (plain JSON objects) against the
 * Kubernetes 1.32 OpenAPI v3 documents in test/fixtures/openapi-v3-k8s-1.32/,
 * as strictly as a kube-apiserver with `fieldValidation=Strict` (unknown
 * fields are violations).
 *
 * Documents are read, prepared and registered with Ajv lazily, once per
 * process; only the schema of a kind actually validated (and what it
 * references) is compiled, and each compiled validator is cached.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';

export interface SchemaViolation {
  path: string;
  message: string;
}

const SCHEMA_DIR = path.resolve(__dirname, '..', 'fixtures', 'openapi-v3-k8s-1.32');
/**
 * Every component schema is registered with Ajv on its own, under
 * `${SCHEMA_ID_BASE}${name}`, so that a schema shared by several documents
 * (all documents carry identical copies of e.g. io.k8s.api.core.v1.PodSpec and
 * ObjectMeta) is compiled once per process, whichever kind needs it first.
 */
const SCHEMA_ID_BASE = 'https://k8s.test/openapi/v3/1.32/components/schemas/';
const LOCAL_REF_PREFIX = '#/components/schemas/';

type JsonObject = Record<string, unknown>;

interface LoadedDocument {
  /** "group/version/kind" -> schema name in components.schemas. */
  gvkIndex: Map<string, string>;
}

let ajvInstance: Ajv | undefined;
const registeredSchemas = new Set<string>();
const documents = new Map<string, LoadedDocument | null>();
const validators = new Map<string, ValidateFunction>();

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Go's base64.StdEncoding, which the apiserver uses for `format: byte` ([]byte) fields.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// RFC 3339, as accepted by metav1.Time / metav1.MicroTime.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function getAjv(): Ajv {
  if (ajvInstance) return ajvInstance;
  const ajv = new Ajv({
    strict: false,
    allErrors: true,
    validateSchema: false,
    // Skipping ajv's generated-code optimisation passes cuts compile time of a Pod by ~1/3.
    code: { optimize: false },
  });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -2147483648 && n <= 2147483647,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addFormat('float', { type: 'number', validate: (n: number) => Number.isFinite(n) });
  ajv.addFormat('double', { type: 'number', validate: (n: number) => Number.isFinite(n) });
  ajv.addFormat('byte', { type: 'string', validate: (s: string) => BASE64.test(s) });
  ajv.addFormat('binary', true);
  ajv.addFormat('password', true);
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (s: string) => DATE_TIME.test(s) && !Number.isNaN(Date.parse(s)),
  });
  ajv.addFormat('date', { type: 'string', validate: (s: string) => DATE.test(s) && !Number.isNaN(Date.parse(s)) });
  // The type check is done by the accompanying oneOf [integer, string].
  ajv.addFormat('int-or-string', true);
  ajvInstance = ajv;
  return ajv;
}

/**
 * Rewrites a schema (in place) for strict validation:
 * - object schemas with `properties` and no `additionalProperties` get
 *   `additionalProperties: false` (unknown fields are errors). Schemas that
 *   combine `properties` with allOf/anyOf/oneOf or preserve unknown fields are
 *   left open, since `additionalProperties` would not see the combined
 *   properties. The k8s `allOf: [{$ref}]` wrappers carry no `properties`, so
 *   strictness comes from the referenced schema itself;
 * - `x-kubernetes-int-or-string: true` becomes "integer or string";
 * - document-local `$ref`s become absolute ids (see SCHEMA_ID_BASE).
 */
function prepareSchema(schema: unknown): void {
  if (Array.isArray(schema)) {
    for (const item of schema) prepareSchema(item);
    return;
  }
  if (!isObject(schema)) return;

  if (typeof schema.$ref === 'string' && schema.$ref.startsWith(LOCAL_REF_PREFIX)) {
    schema.$ref = SCHEMA_ID_BASE + schema.$ref.slice(LOCAL_REF_PREFIX.length);
  }

  if (schema['x-kubernetes-int-or-string'] === true && schema.oneOf === undefined && schema.anyOf === undefined) {
    delete schema.type;
    schema.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (
    isObject(schema.properties) &&
    schema.additionalProperties === undefined &&
    schema.allOf === undefined &&
    schema.anyOf === undefined &&
    schema.oneOf === undefined &&
    schema['x-kubernetes-preserve-unknown-fields'] !== true
  ) {
    schema.additionalProperties = false;
  }

  if (isObject(schema.properties)) {
    for (const sub of Object.values(schema.properties)) prepareSchema(sub);
  }
  for (const key of ['items', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf'] as const) {
    if (schema[key] !== undefined) prepareSchema(schema[key]);
  }
}

function loadDocument(file: string): LoadedDocument | null {
  if (documents.has(file)) return documents.get(file) ?? null;
  const fullPath = path.join(SCHEMA_DIR, file);
  if (!fs.existsSync(fullPath)) {
    documents.set(file, null);
    return null;
  }
  const doc = JSON.parse(fs.readFileSync(fullPath, 'utf8')) as { components?: { schemas?: JsonObject } };
  const ajv = getAjv();
  const gvkIndex = new Map<string, string>();
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) {
    if (!isObject(schema)) continue;
    const gvks = schema['x-kubernetes-group-version-kind'];
    if (Array.isArray(gvks)) {
      for (const gvk of gvks as Array<{ group?: string; version?: string; kind?: string }>) {
        const key = `${gvk.group ?? ''}/${gvk.version}/${gvk.kind}`;
        if (!gvkIndex.has(key)) gvkIndex.set(key, name);
      }
    }
    // Registering is cheap; compiling happens on first use (getSchema), per kind.
    if (registeredSchemas.has(name)) continue;
    prepareSchema(schema);
    ajv.addSchema(schema, SCHEMA_ID_BASE + name);
    registeredSchemas.add(name);
  }
  const loaded: LoadedDocument = { gvkIndex };
  documents.set(file, loaded);
  return loaded;
}

function documentFileFor(group: string, version: string): string {
  return group === '' ? `api_${version}.json` : `apis_${group}_${version}.json`;
}

function validatorFor(apiVersion: string, kind: string): ValidateFunction {
  const cacheKey = `${apiVersion}/${kind}`;
  const cached = validators.get(cacheKey);
  if (cached) return cached;

  const slash = apiVersion.indexOf('/');
  const group = slash === -1 ? '' : apiVersion.slice(0, slash);
  const version = slash === -1 ? apiVersion : apiVersion.slice(slash + 1);
  const gvkKey = `${group}/${version}/${kind}`;

  // The document of the group/version first; other documents only as a fallback
  // (e.g. policy/v1 Eviction is published in the core document).
  const preferred = documentFileFor(group, version);
  const candidates = [
    preferred,
    ...fs.readdirSync(SCHEMA_DIR).filter((f) => f.endsWith('.json') && f !== preferred).sort(),
  ];
  for (const file of candidates) {
    const doc = loadDocument(file);
    const name = doc?.gvkIndex.get(gvkKey);
    if (!doc || !name) continue;
    const validate = getAjv().getSchema(SCHEMA_ID_BASE + name);
    if (!validate) throw new Error(`openapi-validator: could not compile schema ${name} from ${file}`);
    validators.set(cacheKey, validate);
    return validate;
  }
  throw new Error(
    `openapi-validator: no Kubernetes 1.32 OpenAPI schema known for apiVersion "${apiVersion}", kind "${kind}"`,
  );
}

/** Deep copy without null-valued object properties. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    if (v !== null) out[key] = withoutNulls(v);
  }
  return out;
}

/** JSON pointer (ajv instancePath) -> "spec.containers[0].image". */
function toFieldPath(pointer: string, extra?: string): string {
  const segments = pointer === '' ? [] : pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) segments.push(extra);
  let out = '';
  for (const segment of segments) {
    if (/^\d+$/.test(segment)) out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$-]*$/.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out === '' ? '(root)' : out;
}

function toViolations(errors: ErrorObject[]): SchemaViolation[] {
  // Errors from inside a failed oneOf/anyOf branch are folded into that one error.
  const combinators = errors.filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf');
  const violations: SchemaViolation[] = [];
  const seen = new Set<string>();
  const push = (v: SchemaViolation) => {
    const key = `${v.path}\u0000${v.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    violations.push(v);
  };
  for (const error of errors) {
    if (combinators.some((c) => c !== error && error.schemaPath.startsWith(`${c.schemaPath}/`))) continue;
    const params = error.params as Record<string, unknown>;
    switch (error.keyword) {
      case 'additionalProperties':
        push({ path: toFieldPath(error.instancePath, String(params.additionalProperty)), message: 'unknown field' });
        break;
      case 'required':
        push({ path: toFieldPath(error.instancePath, String(params.missingProperty)), message: 'required field is missing' });
        break;
      case 'enum':
        push({
          path: toFieldPath(error.instancePath),
          message: `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`,
        });
        break;
      case 'oneOf':
      case 'anyOf': {
        const branchTypes = errors
          .filter((e) => e.keyword === 'type' && e.schemaPath.startsWith(`${error.schemaPath}/`))
          .map((e) => String((e.params as Record<string, unknown>).type));
        push({
          path: toFieldPath(error.instancePath),
          message: branchTypes.length > 0 ? `must be ${[...new Set(branchTypes)].join(' or ')}` : (error.message ?? 'is invalid'),
        });
        break;
      }
      case 'format':
        push({
          path: toFieldPath(error.instancePath),
          message: params.format === 'byte' ? 'must be base64-encoded (format "byte")' : (error.message ?? 'bad format'),
        });
        break;
      default:
        push({ path: toFieldPath(error.instancePath), message: error.message ?? `failed ${error.keyword}` });
    }
  }
  return violations;
}

/** Validates one manifest; returns [] when valid. Throws if no schema is known for its apiVersion/kind. */
export function validateManifest(manifest: unknown): SchemaViolation[] {
  if (!isObject(manifest)) throw new Error('openapi-validator: manifest must be a JSON object');
  const { apiVersion, kind } = manifest;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    throw new Error('openapi-validator: manifest has no string apiVersion and kind');
  }
  const validate = validatorFor(apiVersion, kind);
  // null is treated as unset (as the apiserver does): null-valued properties are dropped from a copy before validating.
  if (validate(withoutNulls(manifest))) return [];
  return toViolations(validate.errors ?? []);
}

/** Convenience for tests: throws an Error whose message names kind/name and lists every violation (path: message) when invalid. */
export function assertValidManifest(manifest: unknown): void {
  const violations = validateManifest(manifest);
  if (violations.length === 0) return;
  const m = manifest as JsonObject;
  const metadata = isObject(m.metadata) ? m.metadata : {};
  const name =
    typeof metadata.name === 'string'
      ? metadata.name
      : typeof metadata.generateName === 'string'
        ? `${metadata.generateName}*`
        : '<unnamed>';
  const namespace = typeof metadata.namespace === 'string' ? ` in namespace ${metadata.namespace}` : '';
  throw new Error(
    `${String(m.kind)} "${name}"${namespace} (${String(m.apiVersion)}) does not match the Kubernetes 1.32 OpenAPI schema ` +
      `(${violations.length} violation${violations.length === 1 ? '' : 's'}):\n` +
      violations.map((v) => `  - ${v.path}: ${v.message}`).join('\n'),
  );
}
