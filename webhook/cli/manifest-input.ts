// Reading the manifests a user passes with -f: files, directories or stdin, as multi-document YAML
// (JSON is YAML too). Every problem names the file, the document's position in it and the line.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Document, LineCounter, parseAllDocuments } from 'yaml';
import type { KubernetesObject } from '../engine/admission-review';
import { InputError, describeLocation } from '../fleet/input-location';

export { InputError, describeLocation };

/** The command line is wrong: exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The name `-f -` reads from. */
export const STDIN_NAME = '<stdin>';

/** One YAML document of the input, where it came from, and the object it holds. */
export interface InputDocument {
  /** The file as given on the command line, or `<stdin>`. */
  readonly source: string;
  /** The document's position in its file, counting from 1 (empty documents count too). */
  readonly index: number;
  /** The line the document starts on. */
  readonly line: number;
  /** The object; null for an empty document, which is dropped from the output as kubectl drops it. */
  readonly object: KubernetesObject | null;
  /** The document's own text, from the end of the previous document (its `---` line and comments included). */
  readonly text: string;
  /** The parsed document, so a patched object keeps the user's comments and layout. */
  readonly document: Document;
}


const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);

/** The files `-f name` stands for: the file itself, or a directory's YAML and JSON files in name order. */
function expandFilename(name: string): string[] {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(name);
  } catch (error) {
    throw new InputError([`${name}: cannot read: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (error as Error).message}`]);
  }
  if (!stat.isDirectory()) return [name];
  const files = fs
    .readdirSync(name)
    .filter((file) => MANIFEST_EXTENSIONS.has(path.extname(file).toLowerCase()))
    .sort()
    .map((file) => path.join(name, file));
  if (files.length === 0) throw new InputError([`${name}: the directory holds no .yaml, .yml or .json file`]);
  return files;
}

/**
 * Reads every document of every `filenames` entry (`-` is stdin), in order. Throws InputError listing
 * every problem found, so one run shows them all.
 */
export function readManifests(filenames: readonly string[], readStdin: () => string = () => fs.readFileSync(0, 'utf8')): InputDocument[] {
  const documents: InputDocument[] = [];
  const problems: string[] = [];
  for (const name of filenames) {
    let files: string[];
    try {
      files = name === '-' ? ['-'] : expandFilename(name);
    } catch (error) {
      if (!(error instanceof InputError)) throw error;
      problems.push(...error.problems);
      continue;
    }
    for (const file of files) {
      let text: string;
      try {
        text = file === '-' ? readStdin() : fs.readFileSync(file, 'utf8');
      } catch (error) {
        problems.push(`${file === '-' ? STDIN_NAME : file}: cannot read: ${(error as Error).message}`);
        continue;
      }
      const parsed = parseManifestText(text, file === '-' ? STDIN_NAME : file);
      documents.push(...parsed.documents);
      problems.push(...parsed.problems);
    }
  }
  if (problems.length > 0) throw new InputError(problems);
  return documents;
}

/** Parses one file's text into documents; problems are returned, not thrown. */
export function parseManifestText(text: string, source: string): { documents: InputDocument[]; problems: string[] } {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { lineCounter });
  const documents: InputDocument[] = [];
  const problems: string[] = [];
  if (!Array.isArray(parsed)) return { documents, problems }; // an empty stream: nothing to read
  let previousEnd = 0;
  parsed.forEach((document, position) => {
    const index = position + 1;
    const documentText = text.slice(previousEnd, document.range[2]);
    previousEnd = document.range[2];
    const line = lineCounter.linePos(document.range[0]).line;
    const where = (atLine = line) => describeLocation({ source, index, line: atLine });
    if (document.errors.length > 0) {
      for (const error of document.errors) {
        const atLine = error.linePos?.[0].line ?? line;
        const message = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
        problems.push(`${where(atLine)}: not valid YAML: ${message}`);
      }
      return;
    }
    let object: unknown;
    try {
      object = document.toJS({ maxAliasCount: 100 });
    } catch (error) {
      problems.push(`${where()}: cannot be read: ${(error as Error).message}`);
      return;
    }
    const problem = objectProblem(object);
    if (problem) {
      problems.push(`${where()}: ${problem}`);
      return;
    }
    documents.push({ source, index, line, object: (object as KubernetesObject | null) ?? null, text: documentText, document });
  });
  return { documents, problems };
}

function objectProblem(object: unknown): string | undefined {
  if (object === null || object === undefined) return undefined;
  if (typeof object !== 'object' || Array.isArray(object)) {
    return `is ${Array.isArray(object) ? 'a list' : `a ${typeof object}`}, not a Kubernetes object (a mapping with apiVersion and kind)`;
  }
  const record = object as Record<string, unknown>;
  const missing = ['apiVersion', 'kind'].filter((field) => typeof record[field] !== 'string' || record[field] === '');
  if (missing.length > 0) return `is not a Kubernetes object: ${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} missing or not a string`;
  const metadata = record.metadata;
  if (metadata !== undefined && metadata !== null && (typeof metadata !== 'object' || Array.isArray(metadata))) {
    return `${record.kind}: metadata must be a mapping`;
  }
  return undefined;
}
