// The construct's side of typed injections: turns what a user wrote (plain JSON, cdk8s's `k8s.*` types
// with Quantity and IntOrString, Lazy values) into Kubernetes JSON, and checks it against the Kubernetes
// OpenAPI schemas shipped in kubernetes-schemas.json. Only the construct loads this; the webhook passes
// the JSON through as it is.
import { Lazy } from 'cdk8s';
// Imported rather than read, so tsc copies it into lib/ with the code that needs it.
import generatedSchemas from './kubernetes-schemas.json';
import { hasOwnKey, setOwn } from '../../webhook/config/own-property';
import { OpenApiSchemaValidator, SchemaViolation } from './openapi-schema-validator';

/** The kinds of objects an injection carries, each checked against its Kubernetes schema. */
export type InjectedObjectKind = 'container' | 'volume' | 'volumeMount' | 'envVar' | 'localObjectReference';

interface SchemaFile {
  readonly kubernetesVersion: string;
  readonly roots: Record<InjectedObjectKind, string>;
  /** Field names as cdk8s's generated types spell them -> as Kubernetes does. */
  readonly typedNames: Record<string, string>;
  readonly schemas: Record<string, Schema>;
}

interface Schema {
  readonly $ref?: string;
  readonly allOf?: readonly Schema[];
  readonly properties?: Record<string, Schema>;
  readonly additionalProperties?: Schema | boolean;
  readonly items?: Schema;
}

const REF_PREFIX = '#/components/schemas/';

let loaded: { file: SchemaFile; validator: OpenApiSchemaValidator } | undefined;

function schemaFile(): { file: SchemaFile; validator: OpenApiSchemaValidator } {
  if (!loaded) {
    const file = generatedSchemas as unknown as SchemaFile;
    const validator = new OpenApiSchemaValidator();
    // The validator rewrites its copy for strict checking; the walk below reads the original.
    validator.addComponents(structuredClone(file.schemas));
    loaded = { file, validator };
  }
  return loaded;
}

/** The Kubernetes release whose OpenAPI schemas injected objects are checked against. */
export function kubernetesSchemaVersion(): string {
  return schemaFile().file.kubernetesVersion;
}

function dereference(schema: Schema | undefined, file: SchemaFile): Schema | undefined {
  let current = schema;
  for (let depth = 0; current && depth < 8; depth++) {
    const ref = current.$ref ?? (current.allOf?.length === 1 ? current.allOf[0].$ref : undefined);
    if (ref === undefined) return current;
    current = file.schemas[ref.slice(REF_PREFIX.length)];
  }
  return current;
}

/** A `k8s.Quantity` or `k8s.IntOrString` of any copy of the generated types (cdk8s-plus-XX's, or a
 * project's own `cdk8s import`): an instance of a class whose only field is `value`. */
function isWrappedScalar(value: object): value is { value: string | number } {
  const prototype = Object.getPrototypeOf(value);
  if (prototype === Object.prototype || prototype === null) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === 'value';
}

function toJson(value: unknown, schema: Schema | undefined, file: SchemaFile): unknown {
  if (value instanceof Lazy) return toJson(value.produce(), schema, file);
  if (value === null || typeof value !== 'object') return value;
  if (isWrappedScalar(value)) return value.value;
  const resolved = dereference(schema, file);
  if (Array.isArray(value)) {
    // An `undefined` element stays visible (as null) so the schema check reports it rather than it vanishing.
    return value.map((item) => (item === undefined ? null : toJson(item, resolved?.items, file)));
  }
  const properties = resolved?.properties;
  const valuesSchema = typeof resolved?.additionalProperties === 'object' ? resolved.additionalProperties : undefined;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === undefined) continue;
    let name = key;
    if (properties && !hasOwnKey(properties, key) && hasOwnKey(file.typedNames, key) && hasOwnKey(properties, file.typedNames[key])) name = file.typedNames[key];
    setOwn(out, name, toJson(field, properties ? (hasOwnKey(properties, name) ? properties[name] : undefined) : valuesSchema, file));
  }
  return out;
}

/**
 * `value` as Kubernetes JSON: Lazy values produced, Quantity and IntOrString unwrapped, fields that
 * cdk8s's types spell differently (`downwardApi`, `hostIp`) renamed to the Kubernetes spelling, and
 * undefined fields left out. Fields the types do not know (newer releases') are kept as written.
 */
export function toKubernetesJson(value: unknown, kind?: InjectedObjectKind): unknown {
  const { file } = schemaFile();
  return toJson(value, kind ? { $ref: REF_PREFIX + file.roots[kind] } : undefined, file);
}

/** Every way `value` (Kubernetes JSON) does not match the Kubernetes schema of `kind`; [] when it does. */
export function kubernetesSchemaViolations(value: unknown, kind: InjectedObjectKind): SchemaViolation[] {
  const { file, validator } = schemaFile();
  return validator.validate(file.roots[kind], value);
}
