// The command line: inject, explain and diff, parsed with commander. Exit codes a CI job can use:
// 0 done, 1 bad input (unreadable file, invalid YAML or config), 2 bad usage. `status` and `rollout`
// (day-two-commands.ts) add theirs: 3, 4, 5 for what status finds, 6 for the cluster, 7 for a rollout.

import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import { PACKAGE_VERSION } from '../../charts/version';
import { chosenRevision, dns1123LabelError, labelValueError, qualifiedNameError, servedChoosers } from '../config';
import { ClusterError, MissingClusterClientError } from './cluster';
import { EXIT_CLUSTER, addDayTwoCommands } from './day-two-commands';
import { formatDiff, objectPatches } from './diff-command';
import { explainObjects, formatExplanation } from './explain-command';
import { formatInjected, injectNotes } from './inject-command';
import { InjectorSource, loadConfigFile, loadSynthesized } from './injector-source';
import { InputError, UsageError, readManifests } from './manifest-input';
import { DEFAULT_OBJECT_NAMESPACE, ObjectPreview, previewAll } from './preview';

export const EXIT_OK = 0;
export const EXIT_BAD_INPUT = 1;
export const EXIT_USAGE = 2;

/** Where the CLI reads and writes; the real process by default, buffers in tests. */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly readStdin: () => string;
}

const PROCESS_IO: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  readStdin: () => fs.readFileSync(0, 'utf8'),
};

interface InputOptions {
  readonly filename: string[];
  readonly from?: string;
  readonly config?: string;
  readonly namespace: string;
  readonly namespaceLabels?: string;
  readonly namespaceAnnotations?: string;
  readonly revision?: string;
}

/** Parses `k=v,k2=v2` for `flag`, each key checked as a qualified name and each value by `valueError`. */
function parsePairs(text: string, flag: string, what: 'label' | 'annotation', valueError: (value: string) => string | undefined): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const part of text.split(',')) {
    const pair = part.trim();
    if (pair === '') continue;
    const equals = pair.indexOf('=');
    if (equals < 0) throw new UsageError(`${flag}: "${pair}" is not key=value`);
    const key = pair.slice(0, equals).trim();
    const value = pair.slice(equals + 1).trim();
    const keyError = qualifiedNameError(key);
    if (keyError) throw new UsageError(`${flag}: ${what} key "${key}" ${keyError}`);
    const error = valueError(value);
    if (error) throw new UsageError(`${flag}: value "${value}" of ${what} ${key} ${error}`);
    pairs[key] = value;
  }
  return pairs;
}

/** Parses `k=v,k2=v2` into labels, each key and value checked as Kubernetes checks them. */
export function parseLabels(text: string): Record<string, string> {
  return parsePairs(text, '--namespace-labels', 'label', labelValueError);
}

/** Parses `k=v,k2=v2` into annotations (keys checked as Kubernetes checks them; values are free text without commas). */
export function parseAnnotations(text: string): Record<string, string> {
  return parsePairs(text, '--namespace-annotations', 'annotation', () => undefined);
}

function withInputOptions(command: Command): Command {
  return command
    .option('-f, --filename <file>', 'manifests: a YAML or JSON file (many documents allowed), a directory, or - for stdin; repeatable', (value: string, previous: string[]) => [...previous, value], [] as string[])
    .option('--from <dist>', "what cdk8s synth wrote (a directory or file): the injector ConfigMap's config.json and the MutatingWebhookConfiguration")
    .option('--config <file>', 'an injector config.json instead of --from (the webhook configuration\'s rules and selectors are then not checked)')
    .option('-n, --namespace <namespace>', 'namespace of objects without metadata.namespace', DEFAULT_OBJECT_NAMESPACE)
    .option('--namespace-labels <k=v,...>', 'labels of the objects\' namespaces, as the namespaceSelector sees them (kubernetes.io/metadata.name=<namespace> is always added, as the apiserver does)')
    .option('--namespace-annotations <k=v,...>', 'annotations of the objects\' namespaces, for overrides that read namespace defaults (a Namespace object among the manifests gives its own too)')
    .option('--revision <tag-or-revision>', 'with revisions: preview under this tag or revision, whatever the labels choose (default: the one the webhook entries, or the labels, choose)');
}

/** Reads the injector and the manifests, and runs every object through the webhook's path. */
function preview(options: InputOptions, io: CliIo): { previews: ObjectPreview[]; source: InjectorSource } {
  if (options.filename.length === 0) throw new UsageError('no manifests: give -f <file>, -f <directory> or -f - (stdin)');
  if (options.filename.filter((name) => name === '-').length > 1) throw new UsageError('-f - (stdin) can be given only once');
  if (options.from !== undefined && options.config !== undefined) throw new UsageError('give either --from or --config, not both');
  if (options.from === undefined && options.config === undefined) throw new UsageError('give --from <dist> (the synthesized output) or --config <config.json>');
  const namespaceError = dns1123LabelError(options.namespace);
  if (namespaceError) throw new UsageError(`--namespace "${options.namespace}" ${namespaceError}`);
  const namespaceLabels = options.namespaceLabels !== undefined ? parseLabels(options.namespaceLabels) : {};
  const source = options.from !== undefined ? loadSynthesized(options.from) : loadConfigFile(options.config!);
  const documents = readManifests(options.filename, io.readStdin);
  const namespaceAnnotations = options.namespaceAnnotations !== undefined ? parseAnnotations(options.namespaceAnnotations) : {};
  if (options.revision !== undefined) {
    if (!source.config.revisions) throw new UsageError(`--revision "${options.revision}": the config has no revisions`);
    if (chosenRevision(source.config, options.revision) === undefined) {
      throw new UsageError(`--revision "${options.revision}" names no revision or tag of the config (served: ${servedChoosers(source.config).join(', ')})`);
    }
  }
  return { previews: previewAll(documents, source, { namespace: options.namespace, namespaceLabels, namespaceAnnotations, revision: options.revision }), source };
}

/** The command's own name, and the one it answers to as a kubectl plugin (`kubectl sidecar-injector`). */
export const PROGRAM_NAME = 'cdk8s-sidecar-injector';
export const KUBECTL_PLUGIN_NAME = 'kubectl sidecar-injector';
/** The file kubectl looks for on PATH for `kubectl sidecar-injector` (dashes in a plugin's name are underscores in its file's). */
export const KUBECTL_PLUGIN_FILE = 'kubectl-sidecar_injector';

/** The name to show in usage: kubectl runs a plugin by its file's path, so the script's name says how it was called. */
export function programNameFor(scriptPath: string | undefined): string {
  const base = scriptPath ? path.basename(scriptPath).replace(/\.(c?js|ts)$/, '') : '';
  return base === KUBECTL_PLUGIN_FILE ? KUBECTL_PLUGIN_NAME : PROGRAM_NAME;
}

function buildProgram(io: CliIo, exit: (code: number) => void, name: string): Command {
  const program = new Command(name)
    .description(
      'Preview what the sidecar injector webhook does to manifests, before anything reaches a cluster. ' +
        'Each object goes through the engine the webhook runs, as a CREATE, once the webhook configuration\'s ' +
        'rules, namespaceSelector and objectSelector say the apiserver would call the webhook.\n\n' +
        'Exit codes: 0 done, 1 bad input (file, YAML or config), 2 bad usage.',
    )
    .version(PACKAGE_VERSION)
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride()
    .showHelpAfterError('(add --help for usage)');

  withInputOptions(
    program
      .command('inject')
      .description('print the manifests with what the webhook would inject, in the input\'s order (other kinds pass through untouched)'),
  ).action((options: InputOptions) => {
    const { previews } = preview(options, io);
    io.stdout(formatInjected(previews));
    const notes = injectNotes(previews);
    if (notes.length > 0) io.stderr(notes.join('\n') + '\n');
  });

  withInputOptions(
    program
      .command('explain')
      .description('for each object: whether the apiserver calls the webhook, each injection\'s decision and reason, and every warning'),
  )
    .addOption(new Option('-o, --output <format>', 'text for people, json for scripts').choices(['text', 'json']).default('text'))
    .action((options: InputOptions & { output: 'text' | 'json' }) => {
      const { previews, source } = preview(options, io);
      if (options.output === 'json') io.stdout(JSON.stringify(explainObjects(previews, source.config), null, 2) + '\n');
      else io.stdout(formatExplanation(previews, source.config));
    });

  withInputOptions(program.command('diff').description('print the JSONPatch the webhook would answer for each object, for review in a pull request'))
    .addOption(new Option('-o, --output <format>', 'text (one operation per line) or json').choices(['text', 'json']).default('text'))
    .action((options: InputOptions & { output: 'text' | 'json' }) => {
      const { previews } = preview(options, io);
      io.stdout(options.output === 'json' ? JSON.stringify(objectPatches(previews), null, 2) + '\n' : formatDiff(previews));
    });

  addDayTwoCommands(program, { ...io, exit });
  return program;
}

/** Runs the CLI with `args` (without node and the script) and returns the exit code. */
export async function runCli(args: readonly string[], io: CliIo = PROCESS_IO, name: string = PROGRAM_NAME): Promise<number> {
  let exitCode = EXIT_OK;
  const program = buildProgram(io, (code) => {
    if (exitCode === EXIT_OK) exitCode = code;
  }, name);
  try {
    await program.parseAsync([...args], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE; // commander already printed it
    if (error instanceof UsageError) {
      io.stderr(`error: ${error.message}\n(add --help for usage)\n`);
      return EXIT_USAGE;
    }
    if (error instanceof MissingClusterClientError) {
      io.stderr(`error: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof ClusterError) {
      io.stderr(`error: ${error.message}\n`);
      return EXIT_CLUSTER;
    }
    if (error instanceof InputError) {
      io.stderr(error.problems.map((problem) => `error: ${problem}`).join('\n') + '\n');
      return EXIT_BAD_INPUT;
    }
    io.stderr(`internal error: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT_BAD_INPUT;
  }
}
