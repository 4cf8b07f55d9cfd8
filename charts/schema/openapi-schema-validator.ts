// Validates JSON against Kubernetes OpenAPI v3 component schemas as strictly as a kube-apiserver with
// `fieldValidation=Strict`: unknown fields, wrong types and bad formats are violations. The construct
// uses it at synth on every injected object (with the trimmed schemas shipped in this folder); the tests
// use it on every synthesized and mutated object (with the full 1.32 documents). The webhook never loads it.
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { setOwn } from '../../webhook/config/own-property';

/** One way a value does not match its schema, at a field path such as `resources.limits.cpu`. */
export interface SchemaViolation {
  /** The field, written as in the object: `ports[0].containerPort`; `(root)` for the value itself. */
  readonly path: string;
  /** What is wrong: `unknown field`, `must be integer`, ... */
  readonly message: string;
}

type JsonObject = Record<string, unknown>;

/**
 * Every component schema is registered on its own, under `${SCHEMA_ID_BASE}${name}`, so a schema
 * shared by several documents (each carries identical copies of e.g. PodSpec and ObjectMeta) is
 * compiled once, whichever use needs it first.
 */
const SCHEMA_ID_BASE = 'https://kubernetes.schemas.local/openapi/v3/components/schemas/';
const LOCAL_REF_PREFIX = '#/components/schemas/';

// Go's base64.StdEncoding, which the apiserver uses for `format: byte` ([]byte) fields.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
// RFC 3339, as accepted by metav1.Time / metav1.MicroTime.
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function newAjv(): Ajv {
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

/** Deep copy without null-valued object properties (the apiserver treats null as unset). */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (!isObject(value)) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    if (v !== null) setOwn(out, key, withoutNulls(v));
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

/**
 * A set of Kubernetes OpenAPI v3 component schemas (`components.schemas` of the apiserver's
 * `/openapi/v3/...` documents), each compiled on first use and then cached.
 */
export class OpenApiSchemaValidator {
  private readonly ajv = newAjv();
  private readonly registered = new Set<string>();
  private readonly compiled = new Map<string, ValidateFunction>();

  /**
   * Registers component schemas by name (`io.k8s.api.core.v1.Container`). A name already registered
   * is kept as it was: the documents of one Kubernetes release carry identical copies.
   * The schemas are rewritten in place for strict validation; pass a copy to keep the original.
   */
  addComponents(schemas: Readonly<Record<string, unknown>>): void {
    for (const [name, schema] of Object.entries(schemas)) {
      if (!isObject(schema) || this.registered.has(name)) continue;
      prepareSchema(schema);
      this.ajv.addSchema(schema, SCHEMA_ID_BASE + name);
      this.registered.add(name);
    }
  }

  /** Whether a component schema of this name was registered. */
  has(schemaName: string): boolean {
    return this.registered.has(schemaName);
  }

  /** Every way `value` does not match the component schema `schemaName`; [] when it does. */
  validate(schemaName: string, value: unknown): SchemaViolation[] {
    let validate = this.compiled.get(schemaName);
    if (!validate) {
      if (!this.registered.has(schemaName)) throw new Error(`no OpenAPI schema registered as ${schemaName}`);
      validate = this.ajv.getSchema(SCHEMA_ID_BASE + schemaName);
      if (!validate) throw new Error(`could not compile the OpenAPI schema ${schemaName}`);
      this.compiled.set(schemaName, validate);
    }
    if (validate(withoutNulls(value))) return [];
    return toViolations(validate.errors ?? []);
  }
}
