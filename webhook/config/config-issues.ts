// The vocabulary of config problems: an issue at a prop path, the error listing them, and the small
// helpers every validator describes values with.

/** One problem, at a path written the way the props are: `injections[1].containers[0].name`. */
export interface ConfigIssue {
  /** Where the problem is, such as `injections[1].containers[0].name` (`(file)` for the file as a whole). */
  readonly path: string;
  /** What is wrong there and what is expected, such as `must be no more than 63 characters (got 70)`. */
  readonly message: string;
}

/** Thrown when an injector config is not valid; its message lists every issue, one per line, as `path: message`. */
export class InjectorConfigError extends Error {
  constructor(
    /** Every problem found, in the order of the config. */
    readonly issues: readonly ConfigIssue[],
    subject = 'injector config',
  ) {
    super(`invalid ${subject}:\n${issues.map((issue) => `  ${issue.path}: ${issue.message}`).join('\n')}`);
    this.name = 'InjectorConfigError';
  }
}

export type Plain = Record<string, unknown>;

export function isPlainObject(value: unknown): value is Plain {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function describe(value: unknown): string {
  if (value === undefined) return 'nothing (the field is missing)';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') return `a ${typeof value}`;
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** The reason a value is not one of `allowed`, for a missing value as well as a wrong one. */
export function notOneOf(value: unknown, allowed: readonly string[]): string {
  return value === undefined ? `is missing: must be one of ${allowed.join(', ')}` : `${describe(value)} is not one of ${allowed.join(', ')}`;
}

export class IssueCollector {
  readonly issues: ConfigIssue[] = [];
  add(path: string, message: string): void {
    this.issues.push({ path, message });
  }
}
