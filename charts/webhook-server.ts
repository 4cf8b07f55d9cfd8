// What the webhook container runs: a built image, or the official Node image with the server's code
// taken from the output itself (the bundle, compressed, in a ConfigMap). The second needs no image
// build or registry: `kubectl apply -f dist/` works on a stock cluster.

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { k8s } from 'cdk8s-plus-27';
import { Construct } from 'constructs';
import { SidecarInjectorPropsError } from './sidecar-injector-props-error';

/** The official Node image the bundle runs on, pinned to an exact tag (Node 22 LTS, Alpine 3.24). */
export const DEFAULT_NODE_IMAGE = 'node:22.23.2-alpine3.24';

/** The ConfigMap keys of the reconciler's bundle in the image-free mode (its own ConfigMap, `<name>-reconciler-code`). */
export const RECONCILER_BUNDLE_FILES = {
  /** The ConfigMap key of `reconciler.js`, Brotli-compressed. */
  bundle: 'reconciler.js.br',
  /** The ConfigMap key of its bundled packages' license notices, Brotli-compressed. */
  notices: 'RECONCILER-THIRD-PARTY-NOTICES.txt.br',
} as const;

/** The ConfigMap keys of the image-free mode: the bundle and its license notices, Brotli-compressed. */
export const SERVER_BUNDLE_FILES = {
  /** The ConfigMap key of `server.js`, Brotli-compressed. */
  bundle: 'server.js.br',
  /** The ConfigMap key of the bundled packages' license notices, Brotli-compressed. */
  notices: 'THIRD-PARTY-NOTICES.txt.br',
} as const;

/** Where the bundle's ConfigMap is mounted in the image-free mode. */
export const SERVER_BUNDLE_MOUNT = '/opt/sidecar-injector';

/** The variable naming the directory the loader reads the bundle from (the mount path above). */
export const SERVER_BUNDLE_DIR_ENV = 'INJECTOR_BUNDLE_DIR';

/**
 * The container's `node -e` program in the image-free mode: decompress the mounted bundle in memory
 * and run it as a module. Nothing is written, so the root filesystem stays read-only.
 */
export const SERVER_BUNDLE_LOADER = bundleLoader('server.js', SERVER_BUNDLE_FILES.bundle);

/** The reconciler's `node -e` program in the image-free mode: the same loader, for `reconciler.js`. */
export const RECONCILER_BUNDLE_LOADER = bundleLoader('reconciler.js', RECONCILER_BUNDLE_FILES.bundle);

function bundleLoader(name: string, key: string): string {
  return [
    "const fs = require('fs'), path = require('path'), zlib = require('zlib'), Module = require('module');",
    `const dir = process.env.${SERVER_BUNDLE_DIR_ENV};`,
    `const file = path.join(dir, '${name}');`,
    `const source = zlib.brotliDecompressSync(fs.readFileSync(path.join(dir, '${key}'))).toString('utf8');`,
    'const server = new Module(file);',
    'server.filename = file;',
    'server.paths = Module._nodeModulePaths(dir);',
    'server._compile(source, file);',
  ].join('\n');
}

/** The most a ConfigMap may hold (data and binaryData together), as the apiserver enforces it. */
export const CONFIG_MAP_MAX_BYTES = 1024 * 1024;

/** What the construct tells the server source about the webhook. */
export interface WebhookServerTarget {
  /** The injector's name: prefix of the objects the source makes (the bundle ConfigMap is `<name>-server`). */
  readonly name: string;
  /** Namespace of the webhook, where the source's objects go. */
  readonly namespace: string;
  /** Labels for the objects the source makes. */
  readonly labels: Record<string, string>;
}

/** What the construct builds the webhook container with. */
export interface WebhookServerBinding {
  /** The webhook container's image reference. */
  readonly image: string;
  /** The container's command; undefined runs the image's entrypoint. */
  readonly command?: string[];
  /** Environment the image would otherwise bring. */
  readonly env: k8s.EnvVar[];
  /** Pod volumes the container needs (the bundle's ConfigMap in the image-free mode). */
  readonly volumes: k8s.Volume[];
  /** Where the container mounts `volumes`. */
  readonly volumeMounts: k8s.VolumeMount[];
  /** Pod template annotations: a checksum of code that lives in the output, so new code rolls the pods. */
  readonly podAnnotations: Record<string, string>;
  /** The ConfigMap holding the bundle, in the image-free mode. */
  readonly configMap?: k8s.KubeConfigMap;
}

/** Options of {@link WebhookServer.fromBundle}: the Node image and where the built bundle is read from. */
export interface BundleServerOptions {
  /** The Node image to run the bundle on. Pin an exact tag (or a digest). @default DEFAULT_NODE_IMAGE */
  readonly nodeImage?: string;
  /** The directory holding `server.js` and `THIRD-PARTY-NOTICES.txt` (`npm run bundle` writes them).
   * @default this package's `build/webhook/`, found whether it runs from source or from node_modules */
  readonly bundleDirectory?: string;
}

/** What the webhook container runs. Pick one with `fromImage()` or `fromBundle()`. */
export abstract class WebhookServer {
  /** A built webhook image (webhook/Dockerfile; the release workflow publishes it). */
  static fromImage(image: string): WebhookServer {
    return new ImageServer(image);
  }

  /** The official Node image, running the bundle that the output carries in a ConfigMap. */
  static fromBundle(options: BundleServerOptions = {}): WebhookServer {
    return new BundleServer(options);
  }

  /** @internal Makes this source's objects under `scope` and answers how to build the container. */
  abstract _bind(scope: Construct, target: WebhookServerTarget): WebhookServerBinding;

  /** @internal The same for the reconciler's container (`reconciler` prop): the same image, running `reconciler.js`. */
  abstract _bindReconciler(scope: Construct, target: WebhookServerTarget): WebhookServerBinding;
}

class ImageServer extends WebhookServer {
  constructor(readonly image: string) {
    super();
  }

  /** @internal */
  _bind(): WebhookServerBinding {
    if (typeof this.image !== 'string' || !this.image.trim()) {
      throw new SidecarInjectorPropsError([{ path: 'server', message: `WebhookServer.fromImage() needs a non-empty image reference, got ${JSON.stringify(this.image)}` }]);
    }
    return { image: this.image, env: [], volumes: [], volumeMounts: [], podAnnotations: {} };
  }

  /** @internal */
  _bindReconciler(): WebhookServerBinding {
    // The image holds reconciler.js beside server.js (webhook/Dockerfile).
    return { ...this._bind(), command: ['node', '/app/reconciler.js'] };
  }
}

class BundleServer extends WebhookServer {
  constructor(private readonly options: BundleServerOptions) {
    super();
  }

  /** @internal */
  _bind(scope: Construct, target: WebhookServerTarget): WebhookServerBinding {
    return this.bindBundle(scope, target, 'ServerBundle', `${target.name}-server`, readServerBundle(this.options.bundleDirectory), SERVER_BUNDLE_FILES, SERVER_BUNDLE_LOADER);
  }

  /** @internal */
  _bindReconciler(scope: Construct, target: WebhookServerTarget): WebhookServerBinding {
    const bundle = readServerBundle(this.options.bundleDirectory, RECONCILER_BUNDLE);
    return this.bindBundle(scope, target, 'ReconcilerBundle', `${target.name}-reconciler-code`, bundle, RECONCILER_BUNDLE_FILES, RECONCILER_BUNDLE_LOADER);
  }

  private bindBundle(
    scope: Construct,
    target: WebhookServerTarget,
    id: string,
    configMapName: string,
    bundle: ServerBundle,
    keys: { readonly bundle: string; readonly notices: string },
    loader: string,
  ): WebhookServerBinding {
    const nodeImage = this.options.nodeImage ?? DEFAULT_NODE_IMAGE;
    if (typeof nodeImage !== 'string' || !nodeImage.trim()) {
      throw new SidecarInjectorPropsError([{ path: 'server.nodeImage', message: `must be a non-empty image reference, got ${JSON.stringify(nodeImage)}` }]);
    }
    const configMap = new k8s.KubeConfigMap(scope, id, {
      metadata: { name: configMapName, namespace: target.namespace, labels: target.labels },
      binaryData: {
        [keys.bundle]: bundle.compressed.toString('base64'),
        [keys.notices]: bundle.compressedNotices.toString('base64'),
      },
    });
    return {
      image: nodeImage,
      command: ['node', '-e', loader],
      // What webhook/Dockerfile sets for the image.
      env: [
        { name: 'NODE_ENV', value: 'production' },
        { name: SERVER_BUNDLE_DIR_ENV, value: SERVER_BUNDLE_MOUNT },
      ],
      volumes: [{ name: 'server', configMap: { name: configMapName, defaultMode: 0o440 } }],
      volumeMounts: [{ name: 'server', mountPath: SERVER_BUNDLE_MOUNT, readOnly: true }],
      podAnnotations: { 'checksum/server': bundle.sha256 },
      configMap,
    };
  }
}

/** The bundle as the image-free mode ships it. */
export interface ServerBundle {
  /** The directory `server.js` and `THIRD-PARTY-NOTICES.txt` were read from. */
  readonly directory: string;
  /** `server.js`, as built. */
  readonly source: Buffer;
  /** Brotli of `server.js` (quality 11: deterministic, and what the ConfigMap holds). */
  readonly compressed: Buffer;
  /** Brotli of `THIRD-PARTY-NOTICES.txt` (quality 11), shipped next to the bundle in the ConfigMap. */
  readonly compressedNotices: Buffer;
  /** sha256 of `server.js`. */
  readonly sha256: string;
}

const cache = new Map<string, ServerBundle>();

/** Which bundle of the directory: the webhook server's, or the reconciler's. */
export interface BundleFiles {
  /** The bundle's file name in the directory (`server.js`, `reconciler.js`). */
  readonly code: string;
  /** The file of its bundled packages' license notices. */
  readonly notices: string;
}
const SERVER_BUNDLE: BundleFiles = { code: 'server.js', notices: 'THIRD-PARTY-NOTICES.txt' };
const RECONCILER_BUNDLE: BundleFiles = { code: 'reconciler.js', notices: 'RECONCILER-THIRD-PARTY-NOTICES.txt' };

/** Reads and compresses the bundle (once per process and directory); throws saying how to build it. */
export function readServerBundle(directory = defaultBundleDirectory(), files: BundleFiles = SERVER_BUNDLE): ServerBundle {
  const cacheKey = path.join(directory, files.code);
  const cached = cache.get(cacheKey);
  const bundlePath = path.join(directory, files.code);
  if (cached && fs.statSync(bundlePath).size === cached.source.length && fs.readFileSync(bundlePath).equals(cached.source)) return cached;
  let source: Buffer;
  let notices: Buffer;
  try {
    source = fs.readFileSync(bundlePath);
    notices = fs.readFileSync(path.join(directory, files.notices));
  } catch (error) {
    throw new Error(
      `the image-free mode (WebhookServer.fromBundle) needs the webhook bundle, but ${(error as NodeJS.ErrnoException).path ?? bundlePath} ` +
        'is missing: run "npm run bundle" in this package (npm run synth does it first), or use WebhookServer.fromImage()',
    );
  }
  const brotli = (bytes: Buffer) =>
    zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } });
  const bundle: ServerBundle = {
    directory,
    source,
    compressed: brotli(source),
    compressedNotices: brotli(notices),
    sha256: createHash('sha256').update(source).digest('hex'),
  };
  cache.set(cacheKey, bundle);
  return bundle;
}

/** This package's `build/webhook/`: the nearest directory up from here whose package.json is this package's. */
function defaultBundleDirectory(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (manifest.name === 'cdk8s-sidecar-injector') return path.join(dir, 'build', 'webhook');
    } catch {
      // no package.json here: keep going up
    }
    if (path.dirname(dir) === dir) return path.resolve(__dirname, '..', 'build', 'webhook');
  }
}
