/**
 * Test helper: validates Kubernetes manifests (plain JSON objects) against the
 * Kubernetes 1.32 OpenAPI v3 documents in test/fixtures/openapi-v3-k8s-1.32/,
 * as strictly as a kube-apiserver with `fieldValidation=Strict` (unknown
 * fields are violations). The validation itself is the construct library's
 * (charts/schema/openapi-schema-validator.ts); this file finds the schema of
 * a manifest's apiVersion/kind in the full documents.
 *
 * Documents are read and registered lazily, once per process; only the schema
 * of a kind actually validated (and what it references) is compiled.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { OpenApiSchemaValidator, type SchemaViolation } from '../../charts/schema/openapi-schema-validator';

export type { SchemaViolation };

const SCHEMA_DIR = path.resolve(__dirname, '..', 'fixtures', 'openapi-v3-k8s-1.32');

type JsonObject = Record<string, unknown>;

interface LoadedDocument {
  /** "group/version/kind" -> schema name in components.schemas. */
  gvkIndex: Map<string, string>;
}

const schemas = new OpenApiSchemaValidator();
const documents = new Map<string, LoadedDocument | null>();
const schemaOfKind = new Map<string, string>();

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function loadDocument(file: string): LoadedDocument | null {
  if (documents.has(file)) return documents.get(file) ?? null;
  const fullPath = path.join(SCHEMA_DIR, file);
  if (!fs.existsSync(fullPath)) {
    documents.set(file, null);
    return null;
  }
  const doc = JSON.parse(fs.readFileSync(fullPath, 'utf8')) as { components?: { schemas?: JsonObject } };
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
  }
  // Registering is cheap; compiling happens on first use, per kind.
  schemas.addComponents(doc.components?.schemas ?? {});
  const loaded: LoadedDocument = { gvkIndex };
  documents.set(file, loaded);
  return loaded;
}

function documentFileFor(group: string, version: string): string {
  return group === '' ? `api_${version}.json` : `apis_${group}_${version}.json`;
}

function schemaNameFor(apiVersion: string, kind: string): string {
  const cacheKey = `${apiVersion}/${kind}`;
  const cached = schemaOfKind.get(cacheKey);
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
    const name = loadDocument(file)?.gvkIndex.get(gvkKey);
    if (!name) continue;
    schemaOfKind.set(cacheKey, name);
    return name;
  }
  throw new Error(
    `openapi-validator: no Kubernetes 1.32 OpenAPI schema known for apiVersion "${apiVersion}", kind "${kind}"`,
  );
}

/** Validates one manifest; returns [] when valid. Throws if no schema is known for its apiVersion/kind. */
export function validateManifest(manifest: unknown): SchemaViolation[] {
  if (!isObject(manifest)) throw new Error('openapi-validator: manifest must be a JSON object');
  const { apiVersion, kind } = manifest;
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') {
    throw new Error('openapi-validator: manifest has no string apiVersion and kind');
  }
  // null is treated as unset (as the apiserver does).
  return schemas.validate(schemaNameFor(apiVersion, kind), manifest);
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
