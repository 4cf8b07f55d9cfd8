// The apiserver's own name rules (k8s.io/apimachinery/pkg/util/validation), so that a bad name fails
// `cdk8s synth` instead of every pod creation in the cluster.

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const ENV_VAR_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Returns why `value` is not a DNS-1123 label (container, volume, port names), or undefined. */
export function dns1123LabelError(value: string): string | undefined {
  if (value.length > 63) return `must be no more than 63 characters (got ${value.length})`;
  if (!DNS1123_LABEL.test(value)) {
    return 'must consist of lower case alphanumeric characters or "-", and start and end with an alphanumeric character';
  }
  return undefined;
}

/** Returns why `value` is not a DNS-1123 subdomain (object names, annotation prefixes), or undefined. */
export function dns1123SubdomainError(value: string): string | undefined {
  if (value.length > 253) return `must be no more than 253 characters (got ${value.length})`;
  if (!DNS1123_SUBDOMAIN.test(value)) {
    return 'must consist of lower case alphanumeric characters, "-" or ".", and start and end with an alphanumeric character';
  }
  return undefined;
}

/** Returns why `key` is not a valid label or annotation key (`[prefix/]name`), or undefined. */
export function qualifiedNameError(key: string): string | undefined {
  const slash = key.indexOf('/');
  const name = slash === -1 ? key : key.slice(slash + 1);
  if (slash !== -1) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0) return 'prefix part must not be empty';
    const prefixError = dns1123SubdomainError(prefix);
    if (prefixError) return `prefix part ${prefixError}`;
  }
  if (name.length === 0) return 'name part must not be empty';
  if (name.length > 63) return `name part must be no more than 63 characters (got ${name.length})`;
  if (!QUALIFIED_NAME_PART.test(name)) {
    return 'name part must consist of alphanumeric characters, "-", "_" or ".", and start and end with an alphanumeric character';
  }
  return undefined;
}

/** Returns why `value` is not a valid label value, or undefined. */
export function labelValueError(value: string): string | undefined {
  if (value.length > 63) return `must be no more than 63 characters (got ${value.length})`;
  if (!LABEL_VALUE.test(value)) {
    return 'must be empty or consist of alphanumeric characters, "-", "_" or ".", and start and end with an alphanumeric character';
  }
  return undefined;
}

/** Returns why `name` is not a valid environment variable name, or undefined. */
export function envVarNameError(name: string): string | undefined {
  if (!ENV_VAR_NAME.test(name)) {
    return 'must consist of alphabetic characters, digits, "_", "-" or ".", and must not start with a digit';
  }
  return undefined;
}
