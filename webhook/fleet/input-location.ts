// Input errors and how messages name a place in the input: apart from the CLI's manifest-input.ts (and
// its YAML parser), so the reconciler, which reads objects from the apiserver, shares them bundle-lean.

/** The input cannot be used (unreadable, not YAML, not Kubernetes objects): exit code 1. */
export class InputError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'InputError';
  }
}

/** Where a document of the input is: its file, index and first line. */
export interface InputLocation {
  readonly source: string;
  readonly index: number;
  readonly line: number;
}

/** `pods.yaml, document 2, line 14`: how messages name a document. */
export function describeLocation(input: InputLocation): string {
  return `${input.source}, document ${input.index}, line ${input.line}`;
}
