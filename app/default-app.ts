import * as fs from 'node:fs';
import * as path from 'node:path';
import { App } from 'cdk8s';
import { SidecarInjectorChart, WebhookCertificate } from '../charts';
import { DEFAULT_INJECTIONS } from './default-injections';

export const DEFAULT_NAMESPACE = 'sidecar-injector';

export interface DefaultAppOptions {
  /** Where the YAML goes. */
  readonly outdir: string;
  /** Certificate material to serve with; generated when left out. */
  readonly certificate?: WebhookCertificate;
}

/** The built-in app: one injector in namespace `sidecar-injector` carrying the seed examples. */
export function buildDefaultApp(options: DefaultAppOptions): App {
  const app = new App({ outdir: options.outdir });
  new SidecarInjectorChart(app, 'sidecar-injector', {
    namespace: DEFAULT_NAMESPACE,
    injections: DEFAULT_INJECTIONS,
    certificate: options.certificate,
  });
  return app;
}

/** Synthesizes, first removing the YAML of an earlier synth so a renamed chart leaves nothing stale. */
export function synthDefaultApp(options: DefaultAppOptions): string[] {
  removeEarlierSynth(options.outdir);
  const app = buildDefaultApp(options);
  app.synth();
  return fs.readdirSync(options.outdir).filter((file) => file.endsWith('.k8s.yaml')).map((file) => path.join(options.outdir, file));
}

export function removeEarlierSynth(outdir: string): void {
  if (!fs.existsSync(outdir)) return;
  for (const file of fs.readdirSync(outdir)) {
    if (file.endsWith('.k8s.yaml')) fs.rmSync(path.join(outdir, file));
  }
}
