// Running the `cdk8s-sidecar-injector` command the way a user does: a real process, real files, stdin.
import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '../..');
export const CLI_MAIN = path.join(REPO_ROOT, 'webhook/cli/main.ts');

export interface CliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI's entry point (through tsx, as `npm run cli` does) with `args`, feeding `stdin`. */
export function runCliProcess(args: readonly string[], options: { stdin?: string; cwd?: string } = {}): CliRun {
  const result = spawnSync(process.execPath, ['--import', 'tsx', CLI_MAIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    input: options.stdin ?? '',
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `what` for assertion messages: the exit code and both streams. */
export function describeRun(run: CliRun): string {
  return `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

/**
 * `command` as a process, asynchronously (the test's in-process servers keep answering while it
 * runs), fed `stdin`: its exit code and both streams.
 */
export function runProcessAsync(command: string, args: readonly string[], options: { stdin?: string; cwd?: string } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

/** The CLI's entry point (through tsx) as a process, asynchronously, against `kubeconfig`. */
export function runCliAsync(args: readonly string[], kubeconfig: string): Promise<CliRun> {
  return runProcessAsync(process.execPath, ['--import', 'tsx', CLI_MAIN, ...args, '--kubeconfig', kubeconfig]);
}
