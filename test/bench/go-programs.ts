// The benchmarks' Go programs: the Go anchor of `npm run attack` (test/bench/go-anchor/, standard library
// only) and the Go baseline webhook of `npm run bench:cluster` (test/bench/go-baseline/, a module
// requiring k8s.io/api), each built with the Go found here into a directory of the caller's.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

/** Where Go is looked for: Debian's golang-1.26 package, then PATH. */
export const GO_CANDIDATES = ['/usr/lib/go-1.26/bin/go', 'go'];

/** The first Go that answers `go version`, or undefined. */
export function findGo(): string | undefined {
  for (const candidate of GO_CANDIDATES) {
    try {
      execFileSync(candidate, ['version'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** `go version` of a Go binary, e.g. `go version go1.26.8 linux/amd64`. */
export const goVersion = (go: string) => execFileSync(go, ['version'], { encoding: 'utf8' }).trim();

export const GO_BASELINE_MODULE = path.join(__dirname, 'go-baseline');

/**
 * Builds the Go baseline webhook into `dir` and returns the binary's path. Its go.mod and go.sum are
 * used read-only (-mod=readonly): the modules come from the module cache or the Go module proxy, as
 * GOPROXY says, checked against go.sum. Go's own build cache is used, so a second build is a link.
 */
export function buildGoBaseline(go: string, dir: string): string {
  const output = path.join(dir, 'go-baseline');
  execFileSync(go, ['build', '-trimpath', '-o', output, '.'], {
    cwd: GO_BASELINE_MODULE,
    env: { ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly', CGO_ENABLED: '0' },
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 600_000,
  });
  return output;
}
