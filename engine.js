// `cdk8s-sidecar-injector/engine`: what only TypeScript callers need, outside the jsii assembly (charts/engine.ts).
module.exports = require('./lib/charts/engine');
