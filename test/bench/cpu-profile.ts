// Summarizes a V8 .cpuprofile (from `node --cpu-prof`): self and inclusive time per function, with
// the bundle's positions mapped back to the TypeScript sources through its source map.
import * as fs from 'node:fs';
import { SourceMap } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface FunctionTime {
  readonly label: string;
  readonly category: string;
  readonly ms: number;
  /** Percent of the profile's busy (non-idle) time. */
  readonly percent: number;
}

export interface ProfileSummary {
  readonly file: string;
  readonly wallMs: number;
  readonly busyMs: number;
  readonly idleMs: number;
  readonly self: FunctionTime[];
  readonly inclusive: FunctionTime[];
  /** Inclusive time of every function, not only the top ones, for looking one up by name. */
  readonly allInclusive: FunctionTime[];
  readonly categories: { category: string; ms: number; percent: number }[];
}

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);
/** Native bindings that do the actual I/O; TLS encryption happens inside them for a TLS socket. */
const NATIVE_IO = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeUcs2String', 'readStart', 'readStop', 'shutdown']);

export function summarizeProfile(file: string, repoRoot: string, top = 15): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const maps = new Map<string, SourceMap | null>();
  const sourceMapOf = (url: string): SourceMap | null => {
    if (maps.has(url)) return maps.get(url)!;
    let map: SourceMap | null = null;
    try {
      const filePath = url.startsWith('file:') ? fileURLToPath(url) : url;
      const mapFile = filePath + '.map';
      if (fs.existsSync(mapFile)) map = new SourceMap(JSON.parse(fs.readFileSync(mapFile, 'utf8')));
    } catch {
      map = null;
    }
    maps.set(url, map);
    return map;
  };

  const describe = (node: ProfileNode): { key: string; label: string; category: string } => {
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    if (SPECIAL.has(functionName)) return { key: functionName, label: functionName, category: functionName === '(garbage collector)' ? 'GC' : functionName === '(idle)' ? 'idle' : 'V8/native (program)' };
    if (!url && NATIVE_IO.has(name)) return { key: `native:${name}`, label: `${name} (native)`, category: 'Node native I/O (socket and pipe writes, TLS encryption)' };
    if (!url) return { key: `native:${name}`, label: `${name} (native/builtin)`, category: 'V8 builtins (JSON, regexp, ...)' };
    if (url.startsWith('node:')) return { key: `${url}:${name}:${lineNumber}`, label: `${name} ${url}:${lineNumber + 1}`, category: nodeCategory(url) };
    const map = url.startsWith('file:') || url.startsWith('/') ? sourceMapOf(url) : null;
    if (map && lineNumber >= 0) {
      const entry = map.findEntry(lineNumber, columnNumber) as { originalSource?: string; originalLine?: number; name?: string };
      if (entry?.originalSource) {
        // The minified bundle renames functions; the map keeps the source's name of the function.
        const name = entry.name || functionName || '(anonymous)';
        const source = path.relative(repoRoot, entry.originalSource.startsWith('file:') ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(url.replace(/^file:\/\//, '')), entry.originalSource));
        return { key: `${source}:${name}:${entry.originalLine}`, label: `${name} ${source}:${(entry.originalLine ?? 0) + 1}`, category: sourceCategory(source) };
      }
    }
    const short = path.relative(repoRoot, url.startsWith('file:') ? fileURLToPath(url) : url);
    return { key: `${short}:${name}:${lineNumber}`, label: `${name} ${short}:${lineNumber + 1}`, category: sourceCategory(short) };
  };

  const byId = new Map<number, ProfileNode>();
  for (const node of profile.nodes) byId.set(node.id, node);
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time since the previous sample; attribute the following interval to sample i.
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + Math.max(0, delta));
  }
  const info = new Map<number, { key: string; label: string; category: string }>();
  for (const node of profile.nodes) info.set(node.id, describe(node));

  const selfByKey = new Map<string, { label: string; category: string; us: number }>();
  let idleUs = 0;
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const d = info.get(id)!;
    totalUs += us;
    if (d.key === '(idle)') idleUs += us;
    const entry = selfByKey.get(d.key) ?? { label: d.label, category: d.category, us: 0 };
    entry.us += us;
    selfByKey.set(d.key, entry);
  }
  const busyUs = totalUs - idleUs;

  // Inclusive time: each node's subtree, counted once per key along a stack (recursion not doubled).
  const inclusiveUs = new Map<number, number>();
  const subtree = (id: number): number => {
    const node = byId.get(id)!;
    let sum = selfUs.get(id) ?? 0;
    for (const child of node.children ?? []) sum += subtree(child);
    inclusiveUs.set(id, sum);
    return sum;
  };
  const root = profile.nodes[0];
  subtree(root.id);
  const inclusiveByKey = new Map<string, { label: string; category: string; us: number }>();
  const active = new Map<string, number>();
  const walk = (id: number) => {
    const d = info.get(id)!;
    const depth = active.get(d.key) ?? 0;
    if (depth === 0 && !SPECIAL.has(d.key)) {
      const entry = inclusiveByKey.get(d.key) ?? { label: d.label, category: d.category, us: 0 };
      entry.us += inclusiveUs.get(id) ?? 0;
      inclusiveByKey.set(d.key, entry);
    }
    active.set(d.key, depth + 1);
    for (const child of byId.get(id)!.children ?? []) walk(child);
    active.set(d.key, depth);
  };
  walk(root.id);

  const toRows = (map: Map<string, { label: string; category: string; us: number }>, count = top) =>
    [...map.values()]
      .filter((entry) => entry.category !== 'idle')
      .sort((a, b) => b.us - a.us)
      .slice(0, count)
      .map((entry) => ({ label: entry.label, category: entry.category, ms: entry.us / 1000, percent: (entry.us / busyUs) * 100 }));

  const categories = new Map<string, number>();
  for (const entry of selfByKey.values()) if (entry.category !== 'idle') categories.set(entry.category, (categories.get(entry.category) ?? 0) + entry.us);
  return {
    file,
    wallMs: (profile.endTime - profile.startTime) / 1000,
    busyMs: busyUs / 1000,
    idleMs: idleUs / 1000,
    self: toRows(selfByKey),
    inclusive: toRows(inclusiveByKey),
    allInclusive: toRows(inclusiveByKey, Infinity),
    categories: [...categories.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([category, us]) => ({ category, ms: us / 1000, percent: (us / busyUs) * 100 })),
  };
}

function nodeCategory(url: string): string {
  if (/tls|crypto/.test(url)) return 'Node TLS';
  if (/_http|http/.test(url)) return 'Node HTTP';
  if (/stream|net|buffer|events|timers|process|async_hooks/.test(url)) return 'Node streams/net/events';
  return 'Node other';
}

function sourceCategory(source: string): string {
  if (source.includes('webhook/engine')) return 'engine (webhook/engine)';
  if (source.includes('webhook/config')) return 'config (webhook/config)';
  if (source.includes('webhook/server/logger')) return 'logging (webhook/server/logger.ts)';
  if (source.includes('webhook/server')) return 'server (webhook/server)';
  if (source.includes('node_modules/')) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source);
    const pkg = match?.[1] ?? 'dependency';
    return ['express', 'router', 'finalhandler', 'send', 'serve-static', 'body-parser', 'qs', 'path-to-regexp', 'parseurl', 'on-finished', 'debug', 'depd', 'statuses', 'content-type', 'type-is', 'mime-types', 'accepts', 'vary', 'encodeurl', 'escape-html', 'fresh', 'range-parser', 'setprototypeof', 'http-errors', 'cookie', 'merge-descriptors', 'utils-merge', 'proxy-addr', 'forwarded', 'ipaddr.js', 'media-typer', 'negotiator', 'safe-buffer', 'etag', 'ee-first', 'unpipe', 'content-disposition', 'once', 'wrappy', 'is-promise', 'router'].includes(pkg)
      ? 'Express and its dependencies'
      : `dependency ${pkg}`;
  }
  return 'other';
}

if (require.main === module) {
  const summary = summarizeProfile(process.argv[2], path.resolve(__dirname, '../..'), Number(process.argv[3] ?? 20));
  process.stdout.write(JSON.stringify(summary, null, 1) + '\n');
}
