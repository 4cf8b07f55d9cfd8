#!/usr/bin/env node
// `cdk8s-sidecar-injector`: the package's bin (compiled to lib/webhook/cli/main.js).
import { runCli } from './program';

void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
