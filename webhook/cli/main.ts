#!/usr/bin/env node
// `cdk8s-sidecar-injector`: the package's bin (compiled to lib/webhook/cli/main.js), also installed as
// `kubectl-sidecar_injector`, which kubectl runs for `kubectl sidecar-injector`.
import { programNameFor, runCli } from './program';

void runCli(process.argv.slice(2), undefined, programNameFor(process.argv[1])).then((code) => {
  process.exitCode = code;
});
