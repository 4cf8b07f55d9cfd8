// The config and certificate as the kubelet mounts them: directories whose files it swaps atomically
// by re-pointing a `..data` symlink. We watch the directory (not the files, whose inodes change) and
// reload both on any change; an invalid new config keeps the last good one serving.

import { X509Certificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CONFIG_FILE_NAME, ResolvedInjectorConfig, TLS_FILES, loadInjectorConfig } from '../config';

export interface TlsMaterial {
  readonly cert: string;
  readonly key: string;
}

export function readTlsMaterial(tlsDir: string): TlsMaterial {
  return {
    cert: fs.readFileSync(path.join(tlsDir, TLS_FILES.certificate), 'utf8'),
    key: fs.readFileSync(path.join(tlsDir, TLS_FILES.privateKey), 'utf8'),
  };
}

/** When the first certificate of a PEM chain (the serving certificate) expires. */
export function certificateNotAfter(certificatePem: string): Date {
  return new Date(new X509Certificate(certificatePem).validTo);
}

export function readInjectorConfig(configDir: string): ResolvedInjectorConfig {
  return loadInjectorConfig(fs.readFileSync(path.join(configDir, CONFIG_FILE_NAME), 'utf8'));
}

/**
 * Calls `onChange` (debounced) whenever anything in `dir` changes, and every `pollMs` as a safety net
 * for events a filesystem does not deliver. Returns a function that stops watching.
 */
export function watchDirectory(dir: string, onChange: () => void, debounceMs = 100, pollMs = 30_000): () => void {
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      onChange();
    }, debounceMs);
    timer.unref();
  };
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(dir, { persistent: false }, schedule);
    watcher.on('error', () => undefined); // the directory vanished; the poll keeps trying
  } catch {
    watcher = undefined;
  }
  const poll = setInterval(onChange, pollMs);
  poll.unref();
  return () => {
    watcher?.close();
    clearInterval(poll);
    if (timer) clearTimeout(timer);
  };
}
